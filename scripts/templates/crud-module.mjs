// The files of a generated CRUD module (see scripts/generate-module.mjs). Each template is the house style: copy
// it, not around it. Placeholders are derived from the collection's plural and singular kebab-case names.
import { controller } from './crud-controller.mjs';
import { e2eSpec } from './crud-e2e-spec.mjs';
import { ownedService, repository, service } from './crud-service.mjs';

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
