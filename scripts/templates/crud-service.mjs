// The repository and services of a generated CRUD module (crud-module.mjs names the placeholders of `n`).

export const repository = (n) => `import { TransactionHost } from '@nestjs-cls/transactional';
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

export const service = (n) => `import { randomUUID } from 'node:crypto';
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
export const ownedService = (n) => `import { randomUUID } from 'node:crypto';
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
