import { Injectable } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { WhereExpressionBuilder } from 'typeorm';
import { HttpProblemError } from '../common/http-problem.error';
import { bearerChallenge } from './bearer-challenge';
import type { AuthPrincipal } from './principal';
import { RoleDirectory } from './role-directory';

/** Callers' own key: no code outside this file can make an OwnerScope (the constructor's type asks for it). */
const MINT: unique symbol = Symbol('OwnerScope');

/**
 * Whose records an owned repository call may touch: one person's, or every person's (an administrator's reach,
 * made on purpose by `Callers.ownerScope`). Every owned repository method that lists, or reads or writes by id,
 * takes one and applies it in its WHERE clause, so a service cannot reach a record without saying whose.
 */
export class OwnerScope {
  constructor(
    key: typeof MINT,
    private readonly ownerId: string | undefined,
  ) {
    if (key !== MINT) throw new Error('an OwnerScope is made by Callers only');
  }

  /** The person whose records these are, or `undefined` for every person's. */
  get owner(): string | undefined {
    return this.ownerId;
  }

  /** The scope as find options or update/delete criteria, the owner in `column`: spread it beside the id. */
  where<K extends string>(column: K): Partial<Record<K, string>> {
    return this.ownerId === undefined ? {} : ({ [column]: this.ownerId } as Record<K, string>);
  }

  /** Keeps a query builder to the scope's rows; `column` is the owner column as the SQL names it (`o.user_id`). */
  restrict<Q extends WhereExpressionBuilder>(qb: Q, column: string): Q {
    if (this.ownerId !== undefined) qb.andWhere(`${column} = :scopeOwnerId`, { scopeOwnerId: this.ownerId });
    return qb;
  }
}

/**
 * A caller's role, read now from the users module's RoleDirectory (found application-wide, so auth does not depend
 * on users; a demotion applies at once): for the bearer guard's role check, and for a module that keeps
 * records per person, the OwnerScope its repository calls keep to. Exported by AuthModule.
 */
@Injectable()
export class Callers {
  private roles: RoleDirectory | undefined;

  constructor(private readonly moduleRef: ModuleRef) {}

  /** The current role of a user, or `undefined` when that user no longer exists. */
  roleOf(userId: string): Promise<string | undefined> {
    this.roles ??= this.moduleRef.get(RoleDirectory, { strict: false });
    if (!this.roles) throw new Error('roles need a RoleDirectory provider (the users module provides one)');
    return this.roles.roleOf(userId);
  }

  /** Whether the caller is a person whose current role is `admin` (a client token never is). */
  async isAdmin(caller: AuthPrincipal): Promise<boolean> {
    return caller.kind === 'user' && (await this.roleOf(caller.sub)) === 'admin';
  }

  /** The caller's own records only, an administrator's too (what only an author may change). */
  own(caller: AuthPrincipal): OwnerScope {
    return new OwnerScope(MINT, caller.sub);
  }

  /** The caller's own records, or every person's for an administrator (their role read now). */
  async ownerScope(caller: AuthPrincipal): Promise<OwnerScope> {
    return new OwnerScope(MINT, (await this.isAdmin(caller)) ? undefined : caller.sub);
  }

  /**
   * The records of the person a route names (`/users/:userId/...`), for the person themselves or an administrator;
   * `undefined` for anyone else (the route answers its not-found). A token whose user is gone is invalid (401).
   */
  async personScope(caller: AuthPrincipal, userId: string): Promise<OwnerScope | undefined> {
    if (caller.kind !== 'user') return undefined;
    const role = await this.roleOf(caller.sub);
    if (role === undefined) {
      throw new HttpProblemError(401, 'invalid-token', 'The user of this access token no longer exists.', {
        'WWW-Authenticate': bearerChallenge({ error: 'invalid_token' }),
      });
    }
    return caller.sub === userId || role === 'admin' ? new OwnerScope(MINT, userId) : undefined;
  }
}
