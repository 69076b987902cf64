import type { ModuleRef } from '@nestjs/core';
import type { WhereExpressionBuilder } from 'typeorm';
import { describe, expect, it } from 'vitest';
import { HttpProblemError } from '../common/http-problem.error';
import { Callers, OwnerScope } from './callers';
import type { AuthPrincipal } from './principal';

const ROLES: Record<string, string> = { ada: 'user', grace: 'admin' };

/** Callers over a role directory of ROLES. */
function callers(): Callers {
  const directory = { roleOf: (id: string) => Promise.resolve(ROLES[id]) };
  return new Callers({ get: () => directory } as unknown as ModuleRef);
}

const person = (sub: string): AuthPrincipal => ({ kind: 'user', sub }) as AuthPrincipal;
const client = (sub: string): AuthPrincipal => ({ kind: 'client', sub }) as AuthPrincipal;

/** What a query builder was asked to add to its WHERE clause. */
function restricted(scope: OwnerScope): unknown[][] {
  const calls: unknown[][] = [];
  const qb = { andWhere: (...args: unknown[]) => calls.push(args) } as unknown as WhereExpressionBuilder;
  expect(scope.restrict(qb, 'row.owner_id')).toBe(qb);
  return calls;
}

/** An owned repository's method, as every one is declared: the scope first, and required. */
function findById(scope: OwnerScope, id: string): Record<string, string> {
  return { id, ...scope.where('ownerId') };
}

describe('OwnerScope', () => {
  it('is made by Callers only: neither its constructor nor a look-alike object type-checks, and a forged key throws', () => {
    // @ts-expect-error the constructor takes Callers' key, which no other file can name
    expect(() => new OwnerScope(Symbol('OwnerScope'), 'ada')).toThrow(new Error('an OwnerScope is made by Callers only'));
    // @ts-expect-error an object with the same public shape is not an OwnerScope (its owner is private)
    const lookAlike: OwnerScope = { owner: 'ada', where: () => ({}), restrict: (qb: unknown) => qb };
    expect(lookAlike.owner).toBe('ada');
  });

  it('is required by an owned repository method: a call without one does not type-check', () => {
    // @ts-expect-error the scope cannot be left out
    expect(() => findById('order-1')).toThrow(TypeError);
    // @ts-expect-error nor passed as an owner id
    expect(() => findById('ada', 'order-1')).toThrow(TypeError);
    expect(findById(callers().own(person('ada')), 'order-1')).toEqual({ id: 'order-1', ownerId: 'ada' });
  });
});

describe('Callers', () => {
  it("own(): the caller's own records, an administrator's too", () => {
    for (const sub of ['ada', 'grace']) {
      const scope = callers().own(person(sub));
      expect(scope.owner).toBe(sub);
      expect(scope.where('ownerId')).toEqual({ ownerId: sub });
      expect(restricted(scope)).toEqual([['row.owner_id = :scopeOwnerId', { scopeOwnerId: sub }]]);
    }
  });

  it("ownerScope(): a person's own records, every person's for an administrator, a client's own id for a client", async () => {
    const mine = await callers().ownerScope(person('ada'));
    expect([mine.owner, mine.where('userId')]).toEqual(['ada', { userId: 'ada' }]);
    const everyone = await callers().ownerScope(person('grace'));
    expect([everyone.owner, everyone.where('userId'), restricted(everyone)]).toEqual([undefined, {}, []]);
    expect((await callers().ownerScope(client('grace'))).owner).toBe('grace');
  });

  it('personScope(): the named person for themselves or an administrator, nothing for another person or a client', async () => {
    expect((await callers().personScope(person('ada'), 'ada'))?.owner).toBe('ada');
    expect((await callers().personScope(person('grace'), 'ada'))?.owner).toBe('ada');
    expect(await callers().personScope(person('ada'), 'grace')).toBeUndefined();
    expect(await callers().personScope(client('ada'), 'ada')).toBeUndefined();
  });

  it("personScope(): a token whose person is gone is answered 401 invalid_token, even on that person's own path", async () => {
    const gone = callers().personScope(person('gone'), 'gone');
    await expect(gone).rejects.toEqual(
      new HttpProblemError(401, 'invalid-token', 'The user of this access token no longer exists.', {
        'WWW-Authenticate': 'Bearer error="invalid_token"',
      }),
    );
  });
});
