import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import type { Repository } from 'typeorm';
import type { AuditEvent } from '../audit/audit-event.entity';
import { AuditRepository } from '../audit/audit.repository';
import { SqlRunner, Statement, epochMs, sql } from '../database/sql';
import type { UserSortKey } from './dto/list-users-query.dto';
import { type Gender, type Role, User } from './user.entity';

/** What a list shows of a user (never the password hash). */
export type ListedUser = Pick<User, 'id' | 'email' | 'name' | 'gender' | 'age' | 'role' | 'createdAt' | 'updatedAt'>;

interface ListedUserRow {
  id: string;
  email: string;
  name: string;
  gender: Gender;
  age: number;
  role: Role;
  created_at: number | string;
  updated_at: number | string;
}

/** Sort keys map to columns through this allow-list only. */
const SORT_COLUMNS: Record<UserSortKey, string> = {
  age: 'age',
  name: 'name',
  email: 'email',
  createdAt: 'created_at',
};

// Stay hand-written: measured hot paths (the caller's role on every admin request, a list page's total; see below).
const ROLE_OF = sql`SELECT role FROM users WHERE id = :id`;
const TOTAL = sql`SELECT COALESCE(SUM(total), 0) AS total FROM user_counts`;
const TOTAL_OF_GENDER = sql`SELECT COALESCE(SUM(total), 0) AS total FROM user_counts WHERE gender = :gender`;

/** A PUT's new profile; a role or password hash left null stays as it is (a concurrent change to it is kept). */
export interface ProfileWrite {
  email: string;
  name: string;
  gender: Gender;
  age: number;
  role: Role | null;
  passwordHash: string | null;
  updatedAt: number;
}

const pages = new Map<string, Statement>();

/**
 * The page statement of one sort key, direction and filter: each its own prepared statement, so that each keeps
 * a plan on its index (`gender, <key>, id` or `<key>, id`). Ties are broken by id in the same direction.
 */
export function pageStatement(sort: UserSortKey, descending: boolean, byGender: boolean): Statement {
  const key = `${sort} ${descending} ${byGender}`;
  let statement = pages.get(key);
  if (!statement) {
    const direction = descending ? 'DESC' : 'ASC';
    statement = new Statement(
      `SELECT id, email, name, gender, age, role, created_at, updated_at FROM users${byGender ? ' WHERE gender = :gender' : ''}
       ORDER BY ${SORT_COLUMNS[sort]} ${direction}, id ${direction} LIMIT :limit OFFSET :offset`,
    );
    pages.set(key, statement);
  }
  return statement;
}

function listedUser(row: ListedUserRow): ListedUser {
  return {
    id: row.id,
    email: row.email,
    name: row.name,
    gender: row.gender,
    age: Number(row.age),
    role: row.role,
    createdAt: epochMs(row.created_at),
    updatedAt: epochMs(row.updated_at),
  };
}

/**
 * The users module's one way to its tables. The paths every admin request takes (the caller's role on a
 * route open to some roles) or that a list page repeats (the page, its total) are plain prepared SQL through `SqlRunner`, like
 * the OAuth hot paths (TypeORM's query building and hydration were a fifth of `GET /users`' CPU, see
 * docs/performance.md); the other reads and the writes go through TypeORM's repository.
 */
@Injectable()
export class UsersRepository {
  constructor(
    private readonly transactions: TransactionHost<TransactionalAdapterTypeOrm>,
    private readonly db: SqlRunner,
  ) {}

  /** The table, in the current unit of work when there is one. */
  private get users(): Repository<User> {
    return this.transactions.tx.getRepository(User);
  }

  async roleOf(id: string): Promise<Role | undefined> {
    return (await this.db.one<{ role: Role }>(ROLE_OF, { id }))?.role;
  }

  /** A page of users sorted by `sort` (then id), of one gender or all. */
  async page(options: { sort: UserSortKey; descending: boolean; gender?: Gender; limit: number; offset: number }): Promise<ListedUser[]> {
    const { sort, descending, gender, limit, offset } = options;
    const statement = pageStatement(sort, descending, gender !== undefined);
    const { rows } = await this.db.run<ListedUserRow>(statement, gender === undefined ? { limit, offset } : { gender, limit, offset });
    return rows.map(listedUser);
  }

  /** How many users there are (of one gender), from the per-gender counts a trigger keeps. */
  async total(gender?: Gender): Promise<number> {
    const row = await this.db.one<{ total: number | string }>(
      gender === undefined ? TOTAL : TOTAL_OF_GENDER,
      gender === undefined ? {} : { gender },
    );
    return Number(row?.total ?? 0);
  }

  findById(id: string): Promise<User | null> {
    return this.users.findOne({ where: { id } });
  }

  /** The id and password hash of the user with this (normalised) email. */
  credentialsOf(emailNormalized: string): Promise<Pick<User, 'id' | 'passwordHash' | 'role'> | null> {
    return this.users.findOne({ where: { emailNormalized }, select: { id: true, passwordHash: true, role: true } });
  }

  /** What a profile change is checked against: the email, role and password hash as stored. */
  credentialsById(id: string): Promise<Pick<User, 'email' | 'emailNormalized' | 'role' | 'passwordHash'> | null> {
    return this.users.findOne({ where: { id }, select: { email: true, emailNormalized: true, role: true, passwordHash: true } });
  }

  /**
   * Writes a PUT's profile and, only if it changed the row, its audit events, in one unit of work; with
   * `checkedHash`, nothing changes once the password is another than that one. False when nothing changed.
   */
  updateProfile(id: string, profile: ProfileWrite, checkedHash: string | undefined, events: AuditEvent[]): Promise<boolean> {
    const { role, passwordHash, ...fields } = profile;
    // A role or password hash left null is not written: a concurrent change to it is kept.
    const changes: Partial<User> = { ...fields, emailNormalized: profile.email.toLowerCase() };
    if (role !== null) changes.role = role;
    if (passwordHash !== null) changes.passwordHash = passwordHash;
    const write = async () =>
      Boolean((await this.users.update(checkedHash === undefined ? { id } : { id, passwordHash: checkedHash }, changes)).affected);
    if (events.length === 0) return write();
    return this.transactions.withTransaction(async () => {
      if (!(await write())) return false;
      for (const event of events) {
        const { statement, params } = AuditRepository.insertOf(event);
        await this.db.run(statement, params);
      }
      return true;
    });
  }

  /** A new user from its fields (not stored yet). */
  build(fields: Partial<User>): User {
    return this.users.create(fields);
  }

  async insert(user: User): Promise<void> {
    await this.users.insert(user);
  }

  /** Stores many users at once. */
  async insertMany(users: User[]): Promise<void> {
    await this.users.insert(users);
  }

  /** Changes a user's fields; false when there is no such user. */
  async update(id: string, changes: Partial<User>): Promise<boolean> {
    return Boolean((await this.users.update({ id }, changes)).affected);
  }

  /**
   * Replaces a password hash by a new one of the same password, unless it changed meanwhile (a reset, an update):
   * false then, and the newer password stays.
   */
  async replacePasswordHash(id: string, previous: string, next: string): Promise<boolean> {
    return Boolean((await this.users.update({ id, passwordHash: previous }, { passwordHash: next })).affected);
  }

  /** Deletes a user; false when there is no such user. */
  async delete(id: string): Promise<boolean> {
    return Boolean((await this.users.delete({ id })).affected);
  }

  async exists(id: string): Promise<boolean> {
    return (await this.users.count({ where: { id } })) > 0;
  }

  async isEmpty(): Promise<boolean> {
    return (await this.users.count()) === 0;
  }
}
