import { Statement, epochMs, sql } from '../database/sql';
import type { UserSortKey } from './dto/list-users-query.dto';
import type { Gender, Role, User } from './user.entity';

/**
 * The users module's read paths that every admin request takes (the caller's role for `@Roles()`) or that a
 * list page repeats (the page, its total) as plain prepared SQL through `SqlRunner`, like the OAuth hot paths:
 * TypeORM's query building and entity hydration were a fifth of the CPU of `GET /users` (see README,
 * Performance). Writes and the other reads stay with the repository.
 */

/** What a list shows of a user (never the password hash). */
export type ListedUser = Pick<User, 'id' | 'email' | 'name' | 'gender' | 'age' | 'role' | 'createdAt' | 'updatedAt'>;

export interface ListedUserRow {
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

export const ROLE_OF = sql`SELECT role FROM users WHERE id = :id`;
export const TOTAL = sql`SELECT COALESCE(SUM(total), 0) AS total FROM user_counts`;
export const TOTAL_OF_GENDER = sql`SELECT COALESCE(SUM(total), 0) AS total FROM user_counts WHERE gender = :gender`;

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

export function listedUser(row: ListedUserRow): ListedUser {
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
