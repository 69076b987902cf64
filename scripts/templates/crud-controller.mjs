// The controller of a generated CRUD module (crud-module.mjs names the placeholders of `n`).

export const controller = (n) => {
  // --owned: each handler gets the caller and passes it on; a write is any person's (on their own records).
  const caller = n.owned ? '@Principal() caller: AuthPrincipal, ' : '';
  const by = n.owned ? 'caller, ' : '';
  // Reads: any signed-in person (their own records when --owned); writes: administrators, or each person on their own.
  const own = n.owned ? ', ownRecords: true' : '';
  const reads = `@Access({ scopes: [${n.Plural}Scope.read], people: 'any'${own} })`;
  const writes = `@Access({ scopes: [${n.Plural}Scope.write], people: ${n.owned ? "'any'" : "['admin']"}${own} })`;
  return `import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query, Res } from '@nestjs/common';
import { ApiCreatedResponse, ApiNoContentResponse, ApiOkResponse, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
${n.owned ? "import { Access, Principal } from '../auth/auth.decorators';\nimport type { AuthPrincipal } from '../auth/principal';" : "import { Access } from '../auth/auth.decorators';"}
import { ApiProblems, ApiUuidParams } from '../common/openapi';
import type { Page } from '../common/pagination';
import { NoQueryParams, UuidParamPipe } from '../common/validation';
import { Create${n.Singular}Dto } from './dto/create-${n.singular}.dto';
import { List${n.Plural}QueryDto } from './dto/list-${n.plural}-query.dto';
import { ${n.Singular}PageResponseDto, ${n.Singular}ResponseDto } from './dto/${n.singular}-response.dto';
import { Update${n.Singular}Dto } from './dto/update-${n.singular}.dto';
import { ${n.Plural}Scope } from './${n.plural}.scopes';
import { ${n.Plural}Service } from './${n.plural}.service';

/**
 * Every route declares who may call it in one decorator (\`@Access({...})\`, or \`@Public()\`): ${n.owned ? "here any signed-in person, on their own records (the service keeps to them; an administrator reaches everyone's)" : 'here any signed-in person reads and only administrators change the catalogue'};
 * and its query (a DTO, or \`@NoQueryParams()\`). The service does not start while one is missing.
 */
@ApiTags('${n.plural}')
@Controller('${n.plural}')
export class ${n.Plural}Controller {
  constructor(private readonly ${n.pluralVar}: ${n.Plural}Service) {}

  @Get()
  ${reads}
  @ApiOkResponse({ type: ${n.Singular}PageResponseDto })
  list(${caller}@Query() query: List${n.Plural}QueryDto): Promise<Page<${n.Singular}ResponseDto>> {
    return this.${n.pluralVar}.list(${by}query);
  }

  @Get(':${n.idParam}')
  ${reads}
  @ApiOkResponse({ type: ${n.Singular}ResponseDto })
  @ApiUuidParams('${n.idParam}')
  @ApiProblems(404)
  get(${caller}@Param('${n.idParam}', UuidParamPipe) id: string, @NoQueryParams() _query: unknown): Promise<${n.Singular}ResponseDto> {
    return this.${n.pluralVar}.get(${by}id);
  }

  @Post()
  ${writes}
  @ApiCreatedResponse({ type: ${n.Singular}ResponseDto, description: 'Location: /${n.plural}/{id}' })
  @ApiProblems(409, 413)
  async create(
    ${caller}@Body() body: Create${n.Singular}Dto,
    @NoQueryParams() _query: unknown,
    @Res({ passthrough: true }) res: Response,
  ): Promise<${n.Singular}ResponseDto> {
    const created = await this.${n.pluralVar}.create(${by}body);
    res.location(\`/${n.plural}/\${created.id}\`);
    return created;
  }

  @Put(':${n.idParam}')
  ${writes}
  @ApiOkResponse({ type: ${n.Singular}ResponseDto })
  @ApiUuidParams('${n.idParam}')
  @ApiProblems(404, 409, 413)
  update(
    ${caller}@Param('${n.idParam}', UuidParamPipe) id: string,
    @Body() body: Update${n.Singular}Dto,
    @NoQueryParams() _query: unknown,
  ): Promise<${n.Singular}ResponseDto> {
    return this.${n.pluralVar}.update(${by}id, body);
  }

  @Delete(':${n.idParam}')
  ${writes}
  @HttpCode(204)
  @ApiNoContentResponse()
  @ApiUuidParams('${n.idParam}')
  @ApiProblems(404)
  remove(${caller}@Param('${n.idParam}', UuidParamPipe) id: string, @NoQueryParams() _query: unknown): Promise<void> {
    return this.${n.pluralVar}.remove(${by}id);
  }
}
`;
};
