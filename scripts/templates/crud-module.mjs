// The files of a generated CRUD module (see scripts/generate-module.mjs). Each template is the house style: copy
// it, not around it. Placeholders are derived from the collection's plural and singular kebab-case names.

const pascal = (kebab) => kebab.replace(/(^|-)([a-z0-9])/g, (_, __, c) => c.toUpperCase());
const camel = (kebab) => pascal(kebab).replace(/^./, (c) => c.toLowerCase());
const snake = (kebab) => kebab.replace(/-/g, '_');

export function moduleNames({ plural, singular, owned = false }) {
  return {
    owned, // --owned: each record belongs to the person who created it
    plural, // products
    singular, // product
    Plural: pascal(plural), // Products
    Singular: pascal(singular), // Product
    singularVar: camel(singular), // product
    pluralVar: camel(plural), // products
    table: snake(plural), // products
    idParam: `${camel(singular)}Id`, // productId
    moduleClass: `${pascal(plural)}Module`,
  };
}

/** Every file of the module, keyed by its path from the project root. */
export function renderModule({ plural, singular, owned = false, timestamp }) {
  const n = moduleNames({ plural, singular, owned });
  const dir = `src/${plural}`;
  return {
    names: n,
    files: {
      [`${dir}/${singular}.entity.ts`]: entity(n),
      [`${dir}/${plural}.scopes.ts`]: scopes(n),
      [`${dir}/${plural}.errors.ts`]: errors(n),
      [`${dir}/dto/create-${singular}.dto.ts`]: createDto(n),
      [`${dir}/dto/update-${singular}.dto.ts`]: updateDto(n),
      [`${dir}/dto/list-${plural}-query.dto.ts`]: listQueryDto(n),
      [`${dir}/dto/${singular}-response.dto.ts`]: responseDto(n),
      [`${dir}/${plural}.repository.ts`]: repository(n),
      [`${dir}/${plural}.service.ts`]: n.owned ? ownedService(n) : service(n),
      [`${dir}/${plural}.controller.ts`]: controller(n),
      [`${dir}/${plural}.module.ts`]: module(n),
      [`${dir}/migrations/${timestamp}-create-${plural}.ts`]: migration(n, timestamp),
      [`test/e2e/${plural}.e2e-spec.ts`]: e2eSpec(n),
    },
  };
}

// The entity declares the migration's indexes, by name, with their columns in order: the schema-drift suite fails
// when the two differ.
const entity = (n) => `import { Column, Entity, ${n.owned ? 'ForeignKey, ' : ''}Index, PrimaryColumn } from 'typeorm';
import { EpochMsColumn } from '../database/columns';${n.owned ? "\nimport { User } from '../users/user.entity';" : ''}

@Entity('${n.table}')
${
  n.owned
    ? `@Index('uq_${n.table}_owner_name', ['ownerId', 'name'], { unique: true })
@Index('idx_${n.table}_owner_created', ['ownerId', 'createdAt', 'id'])`
    : `@Index('uq_${n.table}_name', ['name'], { unique: true })`
}
@Index('idx_${n.table}_name', ['name', 'id'])
@Index('idx_${n.table}_created', ['createdAt', 'id'])
export class ${n.Singular} {
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id: string;

  /** Unique${n.owned ? ' per owner' : ''}: a second ${n.singular} with the same name is answered 409. */
  @Column({ type: 'varchar', length: 200 })
  name: string;

  @Column({ type: 'varchar', length: 2000, nullable: true })
  description: string | null;
${
  n.owned
    ? `
  /** The person who created it: only they, and administrators, see and change it; deleted with them. */
  @Column({ type: 'varchar', length: 36 })
  @ForeignKey(() => User, { name: 'fk_${n.table}_owner', onDelete: 'CASCADE' })
  ownerId: string;
`
    : ''
}
  @EpochMsColumn()
  createdAt: number;

  @EpochMsColumn()
  updatedAt: number;
}
`;

const scopes = (n) => `import { defineScopes } from '../auth/scopes';

/** The scopes of this module; the descriptions are what the consent page and the OpenAPI document show. */
export const ${n.Plural}Scope = defineScopes({
  read: { name: '${n.plural}:read', description: 'See ${n.plural.replace(/-/g, ' ')}' },
  write: { name: '${n.plural}:write', description: 'Create, change and delete ${n.plural.replace(/-/g, ' ')}' },
});
`;

const errors = (n) => `import { defineErrors } from '../common/domain-error';

/** The error codes of this module and how each is answered (problem type \`urn:problem-type:<code>\`). */
export const ${n.Plural}Error = defineErrors({
  NotFound: { code: '${n.singular}-not-found', status: 404 },
  NameTaken: { code: '${n.singular}-name-taken', status: 409 },
});
`;

const createDto = (n) => `import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsString, Length } from 'class-validator';
import { OptionalField } from '../../common/validation';

export class Create${n.Singular}Dto {
  @ApiProperty({ minLength: 1, maxLength: 200 })
  @IsString({ message: 'name must be a string' })
  @Length(1, 200, { message: 'name must be 1 to 200 characters' })
  name: string;

  @ApiPropertyOptional({ maxLength: 2000 })
  @OptionalField()
  @IsString({ message: 'description must be a string' })
  @Length(0, 2000, { message: 'description must be at most 2000 characters' })
  description?: string;
}
`;

const updateDto = (n) => `import { Create${n.Singular}Dto } from './create-${n.singular}.dto';

/** PUT replaces the ${n.singular}: the fields of a new one (a left-out \`description\` is cleared). */
export class Update${n.Singular}Dto extends Create${n.Singular}Dto {}
`;

const listQueryDto = (n) => `import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional } from 'class-validator';
import { PageQueryDto } from '../../common/pagination';
import { OneOf } from '../../common/validation';

export const ${n.Singular.toUpperCase()}_SORT_KEYS = ['createdAt', 'name'] as const;
export type ${n.Singular}SortKey = (typeof ${n.Singular.toUpperCase()}_SORT_KEYS)[number];

export class List${n.Plural}QueryDto extends PageQueryDto {
  @ApiPropertyOptional({ enum: ${n.Singular.toUpperCase()}_SORT_KEYS, default: 'createdAt', description: 'ties are broken by id' })
  @IsOptional()
  @OneOf('sort', ${n.Singular.toUpperCase()}_SORT_KEYS)
  sort?: ${n.Singular}SortKey;
}
`;

const responseDto = (n) => `import { ApiProperty } from '@nestjs/swagger';
import { PageInfoDto } from '../../common/pagination';
import type { ${n.Singular} } from '../${n.singular}.entity';

export class ${n.Singular}ResponseDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty() name: string;
  @ApiProperty({ type: 'string', nullable: true }) description: string | null;${
    n.owned ? `\n  @ApiProperty({ format: 'uuid', description: 'the person it belongs to' }) ownerId: string;` : ''
  }
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ format: 'date-time' }) updatedAt: string;

  static from(row: ${n.Singular}): ${n.Singular}ResponseDto {
    const dto = new ${n.Singular}ResponseDto();
    dto.id = row.id;
    dto.name = row.name;
    dto.description = row.description;${n.owned ? '\n    dto.ownerId = row.ownerId;' : ''}
    dto.createdAt = new Date(row.createdAt).toISOString();
    dto.updatedAt = new Date(row.updatedAt).toISOString();
    return dto;
  }
}

export class ${n.Singular}PageResponseDto {
  @ApiProperty({ type: [${n.Singular}ResponseDto] }) data: ${n.Singular}ResponseDto[];
  @ApiProperty({ type: PageInfoDto }) page: PageInfoDto;
}
`;

const repository = (n) => `import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import type { Repository } from 'typeorm';${n.owned ? "\nimport type { OwnerScope } from '../auth/callers';" : ''}
import type { ${n.Singular}SortKey } from './dto/list-${n.plural}-query.dto';
import { ${n.Singular} } from './${n.singular}.entity';

/** Sort keys map to columns through this allow-list only: a query value never reaches the SQL text. */
const SORT_COLUMNS: Record<${n.Singular}SortKey, string> = { createdAt: 'row.created_at', name: 'row.name' };

${
  n.owned
    ? `/**
 * The module's one way to its table: every query, built or raw, is a method here. Each that lists, or reads or
 * writes by id, takes the caller's OwnerScope first and keeps to it in its WHERE clause.
 */`
    : "/** The module's one way to its table: every query, built or raw, is a method here. */"
}
@Injectable()
export class ${n.Plural}Repository {
  constructor(private readonly transactions: TransactionHost<TransactionalAdapterTypeOrm>) {}

  /** The table, in the caller's unit of work (\`transactions.withTransaction\`) when there is one. */
  private get rows(): Repository<${n.Singular}> {
    return this.transactions.tx.getRepository(${n.Singular});
  }

${
  n.owned
    ? `  /** A page of the scope's rows sorted by \`sort\` (then id, in the same direction), with the total count. */
  page(scope: OwnerScope, options: { sort: ${n.Singular}SortKey; descending: boolean; limit: number; offset: number }): Promise<[${n.Singular}[], number]> {
    const direction = options.descending ? 'DESC' : 'ASC';
    const qb = scope.restrict(this.rows.createQueryBuilder('row'), 'row.owner_id');
    qb.orderBy(SORT_COLUMNS[options.sort], direction).addOrderBy('row.id', direction);
    return Promise.all([qb.clone().offset(options.offset).limit(options.limit).getMany(), qb.getCount()]);
  }

  /** The row, if it exists within the scope. */
  findById(scope: OwnerScope, id: string): Promise<${n.Singular} | null> {
    return this.rows.findOneBy({ id, ...scope.where('ownerId') });
  }
`
    : `  /** A page sorted by \`sort\` (then id, in the same direction), with the total count. */
  page(options: { sort: ${n.Singular}SortKey; descending: boolean; limit: number; offset: number }): Promise<[${n.Singular}[], number]> {
    const direction = options.descending ? 'DESC' : 'ASC';
    const qb = this.rows.createQueryBuilder('row').orderBy(SORT_COLUMNS[options.sort], direction).addOrderBy('row.id', direction);
    return Promise.all([qb.clone().offset(options.offset).limit(options.limit).getMany(), qb.getCount()]);
  }

  findById(id: string): Promise<${n.Singular} | null> {
    return this.rows.findOneBy({ id });
  }
`
}
  /** A new row from its fields (not stored yet). */
  build(fields: Partial<${n.Singular}>): ${n.Singular} {
    return this.rows.create(fields);
  }

  async insert(row: ${n.Singular}): Promise<void> {
    await this.rows.insert(row);
  }

${
  n.owned
    ? `  /** Changes a row's fields; false when there is no such row within the scope. */
  async update(scope: OwnerScope, id: string, changes: Partial<${n.Singular}>): Promise<boolean> {
    return Boolean((await this.rows.update({ id, ...scope.where('ownerId') }, changes)).affected);
  }

  /** Deletes a row; false when there is no such row within the scope. */
  async delete(scope: OwnerScope, id: string): Promise<boolean> {
    return Boolean((await this.rows.delete({ id, ...scope.where('ownerId') })).affected);
  }`
    : `  /** Changes a row's fields; false when there is no such row. */
  async update(id: string, changes: Partial<${n.Singular}>): Promise<boolean> {
    return Boolean((await this.rows.update({ id }, changes)).affected);
  }

  /** Deletes a row; false when there is no such row. */
  async delete(id: string): Promise<boolean> {
    return Boolean((await this.rows.delete({ id })).affected);
  }`
}
}
`;

/** The end of both services: the 409 for a taken name (`index` says which unique index) and the 404. */
const serviceTail = (n, index, taken) => `  /** Runs an insert or update, answering ${index} with a 409 instead of a 500. */
  private async write<T>(statement: () => Promise<T>): Promise<T> {
    try {
      return await statement();
    } catch (error) {
      if (isUniqueViolation(error)) throw new DomainError(${n.Plural}Error.NameTaken, '${taken}');
      throw error;
    }
  }
}

function notFound(): DomainError {
  return new DomainError(${n.Plural}Error.NotFound, 'No such ${n.singular.replace(/-/g, ' ')}.');
}
`;

const service = (n) => `import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { isUniqueViolation } from '../database/database-errors';
import { DomainError } from '../common/domain-error';
import type { Page } from '../common/pagination';
import type { Create${n.Singular}Dto } from './dto/create-${n.singular}.dto';
import type { List${n.Plural}QueryDto } from './dto/list-${n.plural}-query.dto';
import { ${n.Singular}ResponseDto } from './dto/${n.singular}-response.dto';
import type { Update${n.Singular}Dto } from './dto/update-${n.singular}.dto';
import type { ${n.Singular} } from './${n.singular}.entity';
import { ${n.Plural}Error } from './${n.plural}.errors';
import { ${n.Plural}Repository } from './${n.plural}.repository';

@Injectable()
export class ${n.Plural}Service {
  constructor(private readonly ${n.pluralVar}: ${n.Plural}Repository) {}

  async list(query: List${n.Plural}QueryDto): Promise<Page<${n.Singular}ResponseDto>> {
    const [rows, total] = await this.${n.pluralVar}.page({
      sort: query.sort ?? 'createdAt',
      descending: query.order === 'desc',
      limit: query.limit,
      offset: query.offset,
    });
    return { data: rows.map(${n.Singular}ResponseDto.from), page: { limit: query.limit, offset: query.offset, total } };
  }

  async get(id: string): Promise<${n.Singular}ResponseDto> {
    return ${n.Singular}ResponseDto.from(await this.find(id));
  }

  async create(dto: Create${n.Singular}Dto): Promise<${n.Singular}ResponseDto> {
    const now = Date.now();
    const row = this.${n.pluralVar}.build({ id: randomUUID(), name: dto.name, description: dto.description ?? null, createdAt: now, updatedAt: now });
    await this.write(() => this.${n.pluralVar}.insert(row));
    return ${n.Singular}ResponseDto.from(row);
  }

  async update(id: string, dto: Update${n.Singular}Dto): Promise<${n.Singular}ResponseDto> {
    const row = await this.find(id);
    Object.assign(row, { name: dto.name, description: dto.description ?? null, updatedAt: Math.max(Date.now(), row.updatedAt + 1) });
    const updated = await this.write(() =>
      this.${n.pluralVar}.update(id, { name: row.name, description: row.description, updatedAt: row.updatedAt }),
    );
    // Deleted between the read and the write.
    if (!updated) throw notFound();
    return ${n.Singular}ResponseDto.from(row);
  }

  async remove(id: string): Promise<void> {
    if (!(await this.${n.pluralVar}.delete(id))) throw notFound();
  }

  private async find(id: string): Promise<${n.Singular}> {
    const row = await this.${n.pluralVar}.findById(id);
    if (!row) throw notFound();
    return row;
  }

${serviceTail(n, 'the unique index on `name`', `A ${n.singular.replace(/-/g, ' ')} with this name already exists.`)}`;

/** The service of an `--owned` module: every method acts for a caller, on their own records (an administrator on all). */
const ownedService = (n) => `import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Callers, type OwnerScope } from '../auth/callers';
import type { AuthPrincipal } from '../auth/principal';
import { isUniqueViolation } from '../database/database-errors';
import { DomainError } from '../common/domain-error';
import type { Page } from '../common/pagination';
import type { Create${n.Singular}Dto } from './dto/create-${n.singular}.dto';
import type { List${n.Plural}QueryDto } from './dto/list-${n.plural}-query.dto';
import { ${n.Singular}ResponseDto } from './dto/${n.singular}-response.dto';
import type { Update${n.Singular}Dto } from './dto/update-${n.singular}.dto';
import type { ${n.Singular} } from './${n.singular}.entity';
import { ${n.Plural}Error } from './${n.plural}.errors';
import { ${n.Plural}Repository } from './${n.plural}.repository';

/**
 * Each ${n.singular.replace(/-/g, ' ')} belongs to the person who created it. A caller lists, reads, changes and deletes their own;
 * an administrator everyone's. Another person's is answered 404, as one that does not exist: its existence is
 * not revealed. Every repository call takes the caller's OwnerScope (\`this.callers.ownerScope(caller)\`): a
 * call without one does not compile.
 */
@Injectable()
export class ${n.Plural}Service {
  constructor(
    private readonly ${n.pluralVar}: ${n.Plural}Repository,
    private readonly callers: Callers,
  ) {}

  async list(caller: AuthPrincipal, query: List${n.Plural}QueryDto): Promise<Page<${n.Singular}ResponseDto>> {
    const [rows, total] = await this.${n.pluralVar}.page(await this.callers.ownerScope(caller), {
      sort: query.sort ?? 'createdAt',
      descending: query.order === 'desc',
      limit: query.limit,
      offset: query.offset,
    });
    return { data: rows.map(${n.Singular}ResponseDto.from), page: { limit: query.limit, offset: query.offset, total } };
  }

  async get(caller: AuthPrincipal, id: string): Promise<${n.Singular}ResponseDto> {
    return ${n.Singular}ResponseDto.from(await this.find(await this.callers.ownerScope(caller), id));
  }

  async create(caller: AuthPrincipal, dto: Create${n.Singular}Dto): Promise<${n.Singular}ResponseDto> {
    const now = Date.now();
    const row = this.${n.pluralVar}.build({
      id: randomUUID(),
      name: dto.name,
      description: dto.description ?? null,
      ownerId: caller.sub,
      createdAt: now,
      updatedAt: now,
    });
    await this.write(() => this.${n.pluralVar}.insert(row));
    return ${n.Singular}ResponseDto.from(row);
  }

  async update(caller: AuthPrincipal, id: string, dto: Update${n.Singular}Dto): Promise<${n.Singular}ResponseDto> {
    const scope = await this.callers.ownerScope(caller);
    const row = await this.find(scope, id);
    Object.assign(row, { name: dto.name, description: dto.description ?? null, updatedAt: Math.max(Date.now(), row.updatedAt + 1) });
    const updated = await this.write(() =>
      this.${n.pluralVar}.update(scope, id, { name: row.name, description: row.description, updatedAt: row.updatedAt }),
    );
    // Deleted between the read and the write.
    if (!updated) throw notFound();
    return ${n.Singular}ResponseDto.from(row);
  }

  async remove(caller: AuthPrincipal, id: string): Promise<void> {
    if (!(await this.${n.pluralVar}.delete(await this.callers.ownerScope(caller), id))) throw notFound();
  }

  private async find(scope: OwnerScope, id: string): Promise<${n.Singular}> {
    const row = await this.${n.pluralVar}.findById(scope, id);
    if (!row) throw notFound();
    return row;
  }

${serviceTail(n, "the unique index on the owner's `name`", `You have a ${n.singular.replace(/-/g, ' ')} with this name already.`)}`;

const controller = (n) => {
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

const module = (n) => `import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';${n.owned ? "\nimport { AuthModule } from '../auth/auth.module';" : ''}
import { ${n.Singular} } from './${n.singular}.entity';
import { ${n.Plural}Controller } from './${n.plural}.controller';
import { ${n.Plural}Repository } from './${n.plural}.repository';
import { ${n.Plural}Service } from './${n.plural}.service';

/** Listed in src/features.ts; its migration is found in ./migrations by file name. */
@Module({
  imports: [TypeOrmModule.forFeature([${n.Singular}])${n.owned ? ', AuthModule' : ''}],
  controllers: [${n.Plural}Controller],
  providers: [${n.Plural}Service, ${n.Plural}Repository],
})
export class ${n.moduleClass} {}
`;

const migration = (
  n,
  timestamp,
) => `import { type MigrationInterface, type QueryRunner, Table, ${n.owned ? 'TableForeignKey, ' : ''}TableIndex } from 'typeorm';

${
  n.owned
    ? `/**
 * The ${n.plural.replace(/-/g, ' ')} table; every sort key has an index with \`id\` last (the tie-break). A row goes with its
 * owner: the foreign key to users cascades.
 */`
    : `/** The ${n.plural.replace(/-/g, ' ')} table; every sort key has an index with \`id\` last (the tie-break). */`
}
export class Create${n.Plural}${timestamp} implements MigrationInterface {
  name = 'Create${n.Plural}${timestamp}';

  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: '${n.table}',
        columns: [
          { name: 'id', type: 'varchar', length: '36', isPrimary: true },
          { name: 'name', type: 'varchar', length: '200' },
          { name: 'description', type: 'varchar', length: '2000', isNullable: true },${
            n.owned ? `\n          { name: 'owner_id', type: 'varchar', length: '36' },` : ''
          }
          { name: 'created_at', type: 'bigint' },
          { name: 'updated_at', type: 'bigint' },
        ],${
          n.owned
            ? `
        foreignKeys: [
          new TableForeignKey({
            name: 'fk_${n.table}_owner',
            columnNames: ['owner_id'],
            referencedTableName: 'users',
            referencedColumnNames: ['id'],
            onDelete: 'CASCADE',
          }),
        ],`
            : ''
        }
      }),
    );
${
  n.owned
    ? `    // Names are unique per owner; an owner's list is read by owner, then the sort key.
    await q.createIndex('${n.table}', new TableIndex({ name: 'uq_${n.table}_owner_name', columnNames: ['owner_id', 'name'], isUnique: true }));
    await q.createIndex('${n.table}', new TableIndex({ name: 'idx_${n.table}_owner_created', columnNames: ['owner_id', 'created_at', 'id'] }));
`
    : `    await q.createIndex('${n.table}', new TableIndex({ name: 'uq_${n.table}_name', columnNames: ['name'], isUnique: true }));
`
}    await q.createIndex('${n.table}', new TableIndex({ name: 'idx_${n.table}_name', columnNames: ['name', 'id'] }));
    await q.createIndex('${n.table}', new TableIndex({ name: 'idx_${n.table}_created', columnNames: ['created_at', 'id'] }));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('${n.table}');
  }
}
`;

const e2eSpec = (n) => `import { randomUUID } from 'node:crypto';${n.owned ? "\nimport { DataSource } from 'typeorm';" : ''}
import { afterAll, beforeAll, describe, expect, it } from 'vitest';${
  n.owned ? `\nimport { ${n.Singular} } from '../../src/${n.plural}/${n.singular}.entity';` : ''
}
import { ${n.Plural}Scope } from '../../src/${n.plural}/${n.plural}.scopes';${n.owned ? "\nimport { UsersScope } from '../../src/users/users.scopes';" : ''}
import { bearerChallenge } from '../support/oauth';
import { expectProblem, expectValidationProblem } from '../support/problem';
import { type TestApp, bearer, createTestApp } from '../support/test-app';

const KEYS = ['createdAt', 'description', 'id', 'name', ${n.owned ? "'ownerId', " : ''}'updatedAt'];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO = /^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$/;

describe('${n.plural} API', () => {
  let t: TestApp;
  let reader: string;
  let writer: string;
${
  n.owned
    ? `  /** The owner of what \`writer\` creates. */
  let ownerId: string;
  let other: string;
  let adminId: string;
  let adminToken: string;
  let unrelated: string;

  beforeAll(async () => {
    t = await createTestApp();
    const user = await t.createUser();
    const someoneElse = await t.createUser();
    const admin = await t.createUser({ role: 'admin' });
    ownerId = user.id;
    adminId = admin.id;
    reader = await t.token(user.id, [${n.Plural}Scope.read]);
    writer = await t.token(user.id, [${n.Plural}Scope.read, ${n.Plural}Scope.write]);
    other = await t.token(someoneElse.id, [${n.Plural}Scope.read, ${n.Plural}Scope.write]);
    adminToken = await t.token(admin.id, [${n.Plural}Scope.read, ${n.Plural}Scope.write]);
    unrelated = await t.token(user.id, ['users:read']);
  });`
    : `  let personWriter: string;
  let unrelated: string;

  beforeAll(async () => {
    t = await createTestApp();
    const user = await t.createUser();
    const admin = await t.createUser({ role: 'admin' });
    reader = await t.token(user.id, [${n.Plural}Scope.read]);
    writer = await t.token(admin.id, [${n.Plural}Scope.read, ${n.Plural}Scope.write]);
    personWriter = await t.token(user.id, [${n.Plural}Scope.read, ${n.Plural}Scope.write]);
    unrelated = await t.token(user.id, ['users:read']);
  });`
}
  afterAll(() => t.close());

  /** A name no other test uses: the names are unique. */
  const uniqueName = (prefix = 'item') => \`\${prefix}-\${randomUUID().slice(0, 8)}\`;

  async function create(body: Record<string, unknown> = {}) {
    const res = await t
      .http()
      .post('/${n.plural}')
      .set(...bearer(writer))
      .send({ name: uniqueName(), ...body });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body as { id: string; name: string; description: string | null; createdAt: string; updatedAt: string };
  }

  describe('POST /${n.plural}', () => {
    it('creates one: 201, Location, exactly the documented fields', async () => {
      const name = uniqueName('created');
      const res = await t
        .http()
        .post('/${n.plural}')
        .set(...bearer(writer))
        .send({ name, description: 'The first one' });
      expect(res.status).toBe(201);
      expect(res.headers['content-type']).toMatch(/^application\\/json/);
      expect(Object.keys(res.body).sort()).toEqual(KEYS);
      expect(res.body).toEqual({
        id: expect.stringMatching(UUID),
        name,
        description: 'The first one',${n.owned ? '\n        ownerId,' : ''}
        createdAt: expect.stringMatching(ISO),
        updatedAt: res.body.createdAt,
      });
      expect(res.headers.location).toBe(\`/${n.plural}/\${res.body.id}\`);
      const read = await t.http().get(res.headers.location).set(...bearer(reader));
      expect(read.status).toBe(200);
      expect(read.body).toEqual(res.body);
    });

${
  n.owned
    ? ''
    : `    it('answers 403 to a person who is not an administrator, even with the write scope, and creates nothing', async () => {
      const name = uniqueName('refused');
      const res = await t
        .http()
        .post('/${n.plural}')
        .set(...bearer(personWriter))
        .send({ name });
      expectProblem(res, 403, '/${n.plural}');
      const list = await t.http().get('/${n.plural}?limit=100').set(...bearer(reader));
      expect(list.body.page.total).toBeLessThan(100);
      expect(list.body.data.map((item: { name: string }) => item.name)).not.toContain(name);
    });
`
}
    it('stores a left-out description as null', async () => {
      const created = await create();
      expect(created.description).toBeNull();
    });

    it('answers 409 ${n.singular}-name-taken to a second one with the same name, and keeps the first', async () => {
      const first = await create();
      const res = await t
        .http()
        .post('/${n.plural}')
        .set(...bearer(writer))
        .send({ name: first.name });
      expectProblem(res, 409, '/${n.plural}');
      expect(res.body.type).toBe('urn:problem-type:${n.singular}-name-taken');
      const read = await t.http().get(\`/${n.plural}/\${first.id}\`).set(...bearer(reader));
      expect(read.body).toEqual(first);
    });

    it('answers 400 naming every bad field: missing name, wrong types, unknown fields, null', async () => {
      const res = await t
        .http()
        .post('/${n.plural}')
        .set(...bearer(writer))
        .send({ description: null, colour: 'red' });
      expectValidationProblem(res, '/${n.plural}', ['colour', 'description', 'name']);
      const long = await t
        .http()
        .post('/${n.plural}')
        .set(...bearer(writer))
        .send({ name: 'x'.repeat(201), description: 7 });
      expectValidationProblem(long, '/${n.plural}', ['description', 'name']);
    });

    it('answers 403 insufficient_scope to a token without ${n.plural}:write, and creates nothing', async () => {
      const name = uniqueName('refused');
      const res = await t
        .http()
        .post('/${n.plural}')
        .set(...bearer(reader))
        .send({ name });
      expectProblem(res, 403, '/${n.plural}');
      expect(res.headers['www-authenticate']).toBe(bearerChallenge(t, 'error="insufficient_scope", scope="${n.plural}:write"'));
      const list = await t.http().get('/${n.plural}?limit=100').set(...bearer(reader));
      expect(list.body.data.map((row: { name: string }) => row.name)).not.toContain(name);
    });
  });

  describe('GET /${n.plural}', () => {
    it('answers 401 with the bearer challenge, naming the scope the route needs, without a token', async () => {
      const res = await t.http().get('/${n.plural}');
      expectProblem(res, 401, '/${n.plural}');
      expect(res.headers['www-authenticate']).toBe(bearerChallenge(t, \`realm="api", scope="\${${n.Plural}Scope.read}"\`));
    });

    it('answers 403 insufficient_scope to a token without ${n.plural}:read', async () => {
      const res = await t.http().get('/${n.plural}').set(...bearer(unrelated));
      expectProblem(res, 403, '/${n.plural}');
      expect(res.headers['www-authenticate']).toBe(bearerChallenge(t, 'error="insufficient_scope", scope="${n.plural}:read"'));
    });

    it('pages and sorts in the database, ties broken by id', async () => {
      const prefix = \`sorted-\${randomUUID().slice(0, 6)}\`;
      for (const suffix of ['c', 'a', 'b']) await create({ name: \`\${prefix}-\${suffix}\` });
      const all = await t.http().get('/${n.plural}?sort=name&order=desc&limit=100').set(...bearer(reader));
      expect(all.status).toBe(200);
      const names = (all.body.data as { name: string }[]).map((row) => row.name).filter((name) => name.startsWith(prefix));
      expect(names).toEqual([\`\${prefix}-c\`, \`\${prefix}-b\`, \`\${prefix}-a\`]);
      expect(all.body.page).toEqual({ limit: 100, offset: 0, total: all.body.data.length });

      const byCreation = await t.http().get('/${n.plural}?sort=createdAt&limit=100').set(...bearer(reader));
      const times = (byCreation.body.data as { createdAt: string }[]).map((row) => Date.parse(row.createdAt));
      expect(times).toEqual([...times].sort((a, b) => a - b));
      const page = await t.http().get('/${n.plural}?sort=createdAt&limit=2&offset=1').set(...bearer(reader));
      expect(page.status).toBe(200);
      expect(page.body.data).toEqual(byCreation.body.data.slice(1, 3));
      expect(page.body.page).toEqual({ limit: 2, offset: 1, total: all.body.page.total });
    });

    it('answers 400 naming a bad sort key with the allowed values, and unknown parameters', async () => {
      const res = await t.http().get('/${n.plural}?sort=description&colour=red').set(...bearer(reader));
      const errors = expectValidationProblem(res, '/${n.plural}', ['colour', 'sort']);
      expect(errors.sort).toBe('sort must be one of: createdAt, name');
    });
  });

  describe('GET, PUT and DELETE /${n.plural}/{${n.idParam}}', () => {
    it('replaces one with PUT: a left-out description is cleared, updatedAt moves on', async () => {
      const created = await create({ description: 'before' });
      const name = uniqueName('renamed');
      const res = await t.http().put(\`/${n.plural}/\${created.id}\`).set(...bearer(writer)).send({ name });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ ...created, name, description: null, updatedAt: expect.stringMatching(ISO) });
      expect(Date.parse(res.body.updatedAt)).toBeGreaterThan(Date.parse(created.updatedAt));
    });

    it("answers 409 to a PUT that takes another one's name, and changes nothing", async () => {
      const [first, second] = [await create(), await create()];
      const res = await t.http().put(\`/${n.plural}/\${second.id}\`).set(...bearer(writer)).send({ name: first.name });
      expectProblem(res, 409, \`/${n.plural}/\${second.id}\`);
      const read = await t.http().get(\`/${n.plural}/\${second.id}\`).set(...bearer(reader));
      expect(read.body).toEqual(second);
    });

    it('deletes one: 204 with no body, then 404 on every route', async () => {
      const created = await create();
      const path = \`/${n.plural}/\${created.id}\`;
      const res = await t.http().delete(path).set(...bearer(writer));
      expect(res.status).toBe(204);
      expect(res.text).toBe('');
      for (const again of [
        t.http().get(path).set(...bearer(reader)),
        t.http().put(path).set(...bearer(writer)).send({ name: uniqueName() }),
        t.http().delete(path).set(...bearer(writer)),
      ]) {
        const answer = await again;
        expectProblem(answer, 404, path);
        expect(answer.body.type).toBe('urn:problem-type:${n.singular}-not-found');
      }
    });

    it('answers 403 to PUT and DELETE with a read-only token, and changes nothing', async () => {
      const created = await create();
      const path = \`/${n.plural}/\${created.id}\`;
      expectProblem(await t.http().put(path).set(...bearer(reader)).send({ name: uniqueName() }), 403, path);
      expectProblem(await t.http().delete(path).set(...bearer(reader)), 403, path);
      expect((await t.http().get(path).set(...bearer(reader))).body).toEqual(created);
    });

    it('answers 400 naming ${n.idParam} when the id is not a UUID, and 404 for an unknown one', async () => {
      expectValidationProblem(await t.http().get('/${n.plural}/not-a-uuid').set(...bearer(reader)), '/${n.plural}/not-a-uuid', ['${n.idParam}']);
      const unknown = \`/${n.plural}/\${randomUUID()}\`;
      expectProblem(await t.http().get(unknown).set(...bearer(reader)), 404, unknown);
    });
  });
${
  n.owned
    ? `
  describe('owned records', () => {
    it("shows another person none of one's ${n.plural.replace(/-/g, ' ')}, and answers 404 to their GET, PUT and DELETE, changing nothing", async () => {
      const mine = await create({ description: 'mine' });
      const path = \`/${n.plural}/\${mine.id}\`;
      const theirs = await t.http().get('/${n.plural}?limit=100').set(...bearer(other));
      expect(theirs.status).toBe(200);
      expect(theirs.body.data.map((row: { id: string }) => row.id)).not.toContain(mine.id);
      for (const attempt of [
        t.http().get(path).set(...bearer(other)),
        t.http().put(path).set(...bearer(other)).send({ name: uniqueName('taken-over') }),
        t.http().delete(path).set(...bearer(other)),
      ]) {
        const answer = await attempt;
        expectProblem(answer, 404, path);
        expect(answer.body.type).toBe('urn:problem-type:${n.singular}-not-found');
      }
      expect((await t.http().get(path).set(...bearer(reader))).body).toEqual(mine);
    });

    it('lists only the caller\\'s own, and lets two people use the same name', async () => {
      const mine = await create();
      const same = await t.http().post('/${n.plural}').set(...bearer(other)).send({ name: mine.name });
      expect(same.status, JSON.stringify(same.body)).toBe(201);
      expect(same.body.ownerId).not.toBe(ownerId);
      const list = await t.http().get('/${n.plural}?limit=100').set(...bearer(reader));
      expect(list.body.data.length).toBeGreaterThan(0);
      for (const row of list.body.data as { ownerId: string }[]) expect(row.ownerId).toBe(ownerId);
    });

    it("lets an administrator list, read, change and delete anyone's, the owner staying the owner", async () => {
      const mine = await create();
      const path = \`/${n.plural}/\${mine.id}\`;
      const all = await t.http().get('/${n.plural}?sort=createdAt&order=desc&limit=10').set(...bearer(adminToken));
      expect(all.body.data.map((row: { id: string }) => row.id)).toContain(mine.id);
      expect((await t.http().get(path).set(...bearer(adminToken))).body).toEqual(mine);
      const renamed = await t.http().put(path).set(...bearer(adminToken)).send({ name: uniqueName('by-admin') });
      expect(renamed.status).toBe(200);
      expect(renamed.body.ownerId).toBe(ownerId);
      expect((await t.http().delete(path).set(...bearer(adminToken))).status).toBe(204);
      expectProblem(await t.http().get(path).set(...bearer(reader)), 404, path);
    });

    it("deletes a person's ${n.plural.replace(/-/g, ' ')} with the person, and no one else's", async () => {
      const leaving = await t.createUser();
      const leaver = await t.token(leaving.id, [${n.Plural}Scope.read, ${n.Plural}Scope.write]);
      const paths: string[] = [];
      for (const name of [uniqueName('leaving'), uniqueName('leaving')]) {
        const res = await t.http().post('/${n.plural}').set(...bearer(leaver)).send({ name });
        expect(res.status, JSON.stringify(res.body)).toBe(201);
        paths.push(res.headers.location as string);
      }
      const kept = await create();
      const rows = t.app.get(DataSource).getRepository(${n.Singular});
      expect(await rows.countBy({ ownerId: leaving.id })).toBe(2);

      const deleted = await t.http().delete(\`/users/\${leaving.id}\`).set(...bearer(await t.token(adminId, [UsersScope.write])));
      expect(deleted.status).toBe(204);
      expect(await rows.countBy({ ownerId: leaving.id })).toBe(0);
      for (const path of paths) {
        const answer = await t.http().get(path).set(...bearer(adminToken));
        expectProblem(answer, 404, path);
        expect(answer.body.type).toBe('urn:problem-type:${n.singular}-not-found');
      }
      expect((await t.http().get(\`/${n.plural}/\${kept.id}\`).set(...bearer(reader))).body).toEqual(kept);
    });
  });
`
    : ''
}});
`;
