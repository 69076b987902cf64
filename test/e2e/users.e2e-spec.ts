import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Grant } from '../../src/oauth/entities/grant.entity';
import { RefreshToken } from '../../src/oauth/entities/refresh-token.entity';
import { Session } from '../../src/oauth/entities/session.entity';
import type { Scope } from '../../src/auth/scopes';
import { Order } from '../../src/orders/order.entity';
import type { UserResponseDto } from '../../src/users/dto/user-response.dto';
import { expectProblem, expectValidationProblem } from '../support/problem';
import { ALL_SCOPES, type TestApp, TEST_PASSWORD, createTestApp } from '../support/test-app';
import { orderBody, profileOf, uniqueEmail, userBody } from '../support/factories';
import { bearerChallenge, Browser, issueTokens, login, NO_RATE_LIMITS } from '../support/oauth';

const USER_KEYS = ['age', 'createdAt', 'email', 'gender', 'id', 'name', 'role', 'updatedAt'];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

function auth(token: string): [string, string] {
  return ['Authorization', `Bearer ${token}`];
}

function expectUserShape(body: Record<string, unknown>): void {
  expect(Object.keys(body).sort()).toEqual(USER_KEYS);
  expect(body.id).toMatch(UUID);
  expect(body.createdAt).toMatch(ISO);
  expect(body.updatedAt).toMatch(ISO);
}

/** Orders users as the contract says the database must: by the key, then by id, both in the given direction. */
function sortedIds<T extends { id: string }>(rows: T[], key: (row: T) => string | number, order: 'asc' | 'desc'): string[] {
  const sign = order === 'asc' ? 1 : -1;
  return [...rows]
    .sort((a, b) => {
      const ka = key(a);
      const kb = key(b);
      if (ka !== kb) return (ka < kb ? -1 : 1) * sign;
      return (a.id < b.id ? -1 : 1) * sign;
    })
    .map((row) => row.id);
}

describe('users API', () => {
  let t: TestApp;
  let admin: UserResponseDto;
  let adminToken: string;

  beforeAll(async () => {
    t = await createTestApp(NO_RATE_LIMITS);
    admin = await t.createUser({ role: 'admin', name: 'Admin' });
    adminToken = await t.token(admin.id);
  });
  afterAll(() => t.close());

  async function userWithToken(scopes: Scope[] | string = ALL_SCOPES, overrides: Record<string, unknown> = {}) {
    const user = await t.createUser(overrides);
    return { user, token: await t.token(user.id, scopes) };
  }

  async function listTotal(query = ''): Promise<number> {
    const res = await t
      .http()
      .get(`/users?limit=1${query}`)
      .set(...auth(adminToken));
    expect(res.status).toBe(200);
    return res.body.page.total;
  }

  /** Every user the listing returns, walking all pages with the largest allowed limit. */
  async function listAll(query: string): Promise<UserResponseDto[]> {
    const all: UserResponseDto[] = [];
    for (let offset = 0; ; offset += 100) {
      const res = await t
        .http()
        .get(`/users?limit=100&offset=${offset}${query}`)
        .set(...auth(adminToken));
      expect(res.status).toBe(200);
      all.push(...res.body.data);
      if (res.body.data.length < 100) return all;
    }
  }

  describe('GET /users', () => {
    it('lists users for an admin as {data, page} with limit 20 and offset 0 by default', async () => {
      for (let i = 0; i < 21; i++) await t.createUser();
      const res = await t
        .http()
        .get('/users')
        .set(...auth(adminToken));
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(Object.keys(res.body).sort()).toEqual(['data', 'page']);
      expect(Object.keys(res.body.page).sort()).toEqual(['limit', 'offset', 'total']);
      expect(res.body.page.limit).toBe(20);
      expect(res.body.page.offset).toBe(0);
      expect(res.body.page.total).toBeGreaterThanOrEqual(22);
      expect(res.body.data).toHaveLength(20);
      for (const user of res.body.data) expectUserShape(user);
    });

    it('echoes limit and offset in page and returns at most limit users', async () => {
      await t.createUser();
      await t.createUser();
      const total = await listTotal();
      const res = await t
        .http()
        .get('/users?limit=2&offset=1')
        .set(...auth(adminToken));
      expect(res.status).toBe(200);
      expect(res.body.page).toEqual({ limit: 2, offset: 1, total });
      expect(res.body.data).toHaveLength(2);
    });

    it('accepts limit 1 and limit 100, the bounds of the range', async () => {
      const one = await t
        .http()
        .get('/users?limit=1')
        .set(...auth(adminToken));
      expect(one.status).toBe(200);
      expect(one.body.data).toHaveLength(1);
      expect(one.body.page.limit).toBe(1);
      const hundred = await t
        .http()
        .get('/users?limit=100')
        .set(...auth(adminToken));
      expect(hundred.status).toBe(200);
      expect(hundred.body.page.limit).toBe(100);
    });

    it.each(['0', '101', '-1', '1.5', 'ten', ''])('rejects limit=%s with 400 naming limit', async (limit) => {
      const res = await t
        .http()
        .get(`/users?limit=${limit}`)
        .set(...auth(adminToken));
      expectValidationProblem(res, '/users', ['limit']);
    });

    it.each(['-1', '1.5', 'x'])('rejects offset=%s with 400 naming offset', async (offset) => {
      const res = await t
        .http()
        .get(`/users?offset=${offset}`)
        .set(...auth(adminToken));
      expectValidationProblem(res, '/users', ['offset']);
    });

    it('answers an offset past the end with an empty page and the true total', async () => {
      const total = await listTotal();
      const res = await t
        .http()
        .get(`/users?offset=${total + 5}`)
        .set(...auth(adminToken));
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ data: [], page: { limit: 20, offset: total + 5, total } });
    });

    it('answers 403 problem+json when a user (not an admin) lists users, even with users:read', async () => {
      const { token } = await userWithToken();
      const res = await t
        .http()
        .get('/users')
        .set(...auth(token));
      expectProblem(res, 403, '/users');
      expect(res.headers['www-authenticate']).toBeUndefined();
    });

    it('answers 403 insufficient_scope when an admin token lacks users:read', async () => {
      const token = await t.token(admin.id, ['users:write', 'orders:read', 'orders:write']);
      const res = await t
        .http()
        .get('/users')
        .set(...auth(token));
      expectProblem(res, 403, '/users');
      expect(res.headers['www-authenticate']).toBe(bearerChallenge(t, 'error="insufficient_scope", scope="users:read"'));
    });

    it.each(['female', 'male', 'other'] as const)('filters by gender=%s in the list and in page.total', async (gender) => {
      const mine = await t.createUser({ gender });
      const others = await Promise.all(
        ['female', 'male', 'other'].filter((g) => g !== gender).map((g) => t.createUser({ gender: g as typeof gender })),
      );
      const listed = await listAll(`&gender=${gender}`);
      expect(listed.every((u) => u.gender === gender)).toBe(true);
      expect(listed.map((u) => u.id)).toContain(mine.id);
      for (const other of others) expect(listed.map((u) => u.id)).not.toContain(other.id);
      expect(await listTotal(`&gender=${gender}`)).toBe(listed.length);
      const everyone = await listAll('');
      expect(listed.length).toBe(everyone.filter((u) => u.gender === gender).length);
    });

    it('counts every user in page.total without a filter', async () => {
      const everyone = await listAll('');
      expect(await listTotal()).toBe(everyone.length);
    });

    it('keeps page.total exact after a create, a gender change by PUT and a delete', async () => {
      const [all0, female0, male0] = [await listTotal(), await listTotal('&gender=female'), await listTotal('&gender=male')];
      const user = await t.createUser({ gender: 'female' });
      expect([await listTotal(), await listTotal('&gender=female'), await listTotal('&gender=male')]).toEqual([
        all0 + 1,
        female0 + 1,
        male0,
      ]);

      const put = await t
        .http()
        .put(`/users/${user.id}`)
        .set(...auth(adminToken))
        .send(profileOf(user, { gender: 'male' }));
      expect(put.status).toBe(200);
      expect([await listTotal(), await listTotal('&gender=female'), await listTotal('&gender=male')]).toEqual([
        all0 + 1,
        female0,
        male0 + 1,
      ]);

      const same = await t
        .http()
        .put(`/users/${user.id}`)
        .set(...auth(adminToken))
        .send(profileOf(user, { gender: 'male', age: 31 }));
      expect(same.status).toBe(200);
      expect([await listTotal(), await listTotal('&gender=female'), await listTotal('&gender=male')]).toEqual([
        all0 + 1,
        female0,
        male0 + 1,
      ]);

      const del = await t
        .http()
        .delete(`/users/${user.id}`)
        .set(...auth(adminToken));
      expect(del.status).toBe(204);
      expect([await listTotal(), await listTotal('&gender=female'), await listTotal('&gender=male')]).toEqual([all0, female0, male0]);
    });

    it('answers 400 for a sort key that is not on the allow-list', async () => {
      const res = await t
        .http()
        .get('/users?sort=password_hash')
        .set(...auth(adminToken));
      expectValidationProblem(res, '/users', ['sort']);
    });
  });

  describe('GET /users/{userId}', () => {
    it('returns the caller its own record', async () => {
      const { user, token } = await userWithToken(['users:read']);
      const res = await t
        .http()
        .get(`/users/${user.id}`)
        .set(...auth(token));
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expectUserShape(res.body);
      expect(res.body).toEqual({ ...user });
    });

    it("answers 404 for another user's record, exactly as for an id that does not exist", async () => {
      const { token } = await userWithToken(['users:read']);
      const other = await t.createUser();
      const foreign = await t
        .http()
        .get(`/users/${other.id}`)
        .set(...auth(token));
      expectProblem(foreign, 404, `/users/${other.id}`);
      const missingId = randomUUID();
      const missing = await t
        .http()
        .get(`/users/${missingId}`)
        .set(...auth(token));
      expectProblem(missing, 404, `/users/${missingId}`);
      expect({ ...foreign.body, instance: undefined }).toEqual({ ...missing.body, instance: undefined });
    });

    it('lets an admin read any user', async () => {
      const other = await t.createUser({ gender: 'male', age: 77, name: 'Someone Else' });
      const res = await t
        .http()
        .get(`/users/${other.id}`)
        .set(...auth(adminToken));
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ ...other });
    });

    it('answers 404 to an admin for a user that does not exist', async () => {
      const id = randomUUID();
      expectProblem(
        await t
          .http()
          .get(`/users/${id}`)
          .set(...auth(adminToken)),
        404,
        `/users/${id}`,
      );
    });

    it('matches the user id case-insensitively, as UUIDs are', async () => {
      const { user, token } = await userWithToken(['users:read']);
      const res = await t
        .http()
        .get(`/users/${user.id.toUpperCase()}`)
        .set(...auth(token));
      expect(res.status).toBe(200);
      expect(res.body.id).toBe(user.id);
    });

    it('needs users:read (403 insufficient_scope)', async () => {
      const { user, token } = await userWithToken(['users:write', 'orders:read', 'orders:write']);
      const res = await t
        .http()
        .get(`/users/${user.id}`)
        .set(...auth(token));
      expectProblem(res, 403, `/users/${user.id}`);
      expect(res.headers['www-authenticate']).toBe(bearerChallenge(t, 'error="insufficient_scope", scope="users:read"'));
    });
  });

  describe('POST /users', () => {
    it('creates a user: 201, Location /users/{id}, the user without password, role user by default', async () => {
      const body = userBody({ name: 'Grace Hopper', gender: 'female', age: 85 });
      const res = await t
        .http()
        .post('/users')
        .set(...auth(adminToken))
        .send(body);
      expect(res.status).toBe(201);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expectUserShape(res.body);
      expect(res.body).toMatchObject({ email: body.email, name: 'Grace Hopper', gender: 'female', age: 85, role: 'user' });
      expect(res.body.createdAt).toBe(res.body.updatedAt);
      expect(res.headers.location).toBe(`/users/${res.body.id}`);

      const fetched = await t
        .http()
        .get(res.headers.location)
        .set(...auth(adminToken));
      expect(fetched.status).toBe(200);
      expect(fetched.body).toEqual(res.body);
      expect((await login(new Browser(t), body.email, body.password)).status).toBe(303);
    });

    it('lets an admin create another admin, who may then list users', async () => {
      const res = await t
        .http()
        .post('/users')
        .set(...auth(adminToken))
        .send(userBody({ role: 'admin' }));
      expect(res.status).toBe(201);
      expect(res.body.role).toBe('admin');
      const list = await t
        .http()
        .get('/users')
        .set(...auth(await t.token(res.body.id)));
      expect(list.status).toBe(200);
    });

    it('answers 409 for an email that is taken', async () => {
      const existing = await t.createUser();
      const res = await t
        .http()
        .post('/users')
        .set(...auth(adminToken))
        .send(userBody({ email: existing.email }));
      expectProblem(res, 409, '/users');
    });

    it('answers 409 for an email that is taken in another letter case', async () => {
      const email = uniqueEmail('Case');
      await t.createUser({ email });
      for (const variant of [email.toUpperCase(), email.toLowerCase()]) {
        const res = await t
          .http()
          .post('/users')
          .set(...auth(adminToken))
          .send(userBody({ email: variant }));
        expectProblem(res, 409, '/users');
      }
      const listed = (await listAll('')).filter((u) => u.email.toLowerCase() === email.toLowerCase());
      expect(listed).toHaveLength(1);
    });

    it('answers 403 problem+json when a user (not an admin) creates a user, and creates nothing', async () => {
      const { token } = await userWithToken();
      const body = userBody();
      const res = await t
        .http()
        .post('/users')
        .set(...auth(token))
        .send(body);
      expectProblem(res, 403, '/users');
      expect((await listAll('')).map((u) => u.email)).not.toContain(body.email);
    });

    it('answers 403 to a user who sends role when creating a user', async () => {
      const { token } = await userWithToken();
      const res = await t
        .http()
        .post('/users')
        .set(...auth(token))
        .send(userBody({ role: 'admin' }));
      expectProblem(res, 403, '/users');
    });

    it('needs users:write (403 insufficient_scope)', async () => {
      const token = await t.token(admin.id, ['users:read']);
      const res = await t
        .http()
        .post('/users')
        .set(...auth(token))
        .send(userBody());
      expectProblem(res, 403, '/users');
      expect(res.headers['www-authenticate']).toBe(bearerChallenge(t, 'error="insufficient_scope", scope="users:write"'));
    });
  });

  describe('PUT /users/{userId}', () => {
    it('lets a user replace its own profile', async () => {
      const { user, token } = await userWithToken();
      const email = uniqueEmail('renamed');
      const res = await t
        .http()
        .put(`/users/${user.id}`)
        .set(...auth(token))
        .send({ email, name: 'Renamed', gender: 'other', age: 0, currentPassword: TEST_PASSWORD });
      expect(res.status).toBe(200);
      expectUserShape(res.body);
      expect(res.body).toMatchObject({
        id: user.id,
        email,
        name: 'Renamed',
        gender: 'other',
        age: 0,
        role: 'user',
        createdAt: user.createdAt,
      });
      expect(Date.parse(res.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(user.updatedAt));
      const fetched = await t
        .http()
        .get(`/users/${user.id}`)
        .set(...auth(token));
      expect(fetched.body).toEqual(res.body);
    });

    it('lets an admin update any user', async () => {
      const user = await t.createUser();
      const res = await t
        .http()
        .put(`/users/${user.id}`)
        .set(...auth(adminToken))
        .send(profileOf(user, { name: 'Set By Admin', age: 150 }));
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: user.id, name: 'Set By Admin', age: 150, role: 'user' });
    });

    it("answers 404 when a user updates another user's record, and changes nothing", async () => {
      const { token } = await userWithToken();
      const other = await t.createUser();
      const res = await t
        .http()
        .put(`/users/${other.id}`)
        .set(...auth(token))
        .send(profileOf(other, { name: 'Hijacked' }));
      expectProblem(res, 404, `/users/${other.id}`);
      const after = await t
        .http()
        .get(`/users/${other.id}`)
        .set(...auth(adminToken));
      expect(after.body).toEqual({ ...other });
    });

    it('answers 404 to an admin updating a user that does not exist', async () => {
      const id = randomUUID();
      const res = await t
        .http()
        .put(`/users/${id}`)
        .set(...auth(adminToken))
        .send(userBody({ password: undefined }));
      expectProblem(res, 404, `/users/${id}`);
    });

    it.each(['admin', 'user'])('answers 403 problem+json when a user sends role=%s, and changes nothing', async (role) => {
      const { user, token } = await userWithToken();
      const res = await t
        .http()
        .put(`/users/${user.id}`)
        .set(...auth(token))
        .send(profileOf(user, { name: 'Changed', role }));
      expectProblem(res, 403, `/users/${user.id}`);
      const after = await t
        .http()
        .get(`/users/${user.id}`)
        .set(...auth(token));
      expect(after.body).toEqual({ ...user });
    });

    it('lets an admin set a role, which then takes effect', async () => {
      const { user, token } = await userWithToken();
      expect(
        (
          await t
            .http()
            .get('/users')
            .set(...auth(token))
        ).status,
      ).toBe(403);
      const promote = await t
        .http()
        .put(`/users/${user.id}`)
        .set(...auth(adminToken))
        .send(profileOf(user, { role: 'admin' }));
      expect(promote.status).toBe(200);
      expect(promote.body.role).toBe('admin');
      expect(
        (
          await t
            .http()
            .get('/users')
            .set(...auth(token))
        ).status,
      ).toBe(200);
      const demote = await t
        .http()
        .put(`/users/${user.id}`)
        .set(...auth(adminToken))
        .send(profileOf(user, { role: 'user' }));
      expect(demote.status).toBe(200);
      expect(demote.body.role).toBe('user');
      expect(
        (
          await t
            .http()
            .get('/users')
            .set(...auth(token))
        ).status,
      ).toBe(403);
    });

    it('keeps the role when an admin updates a profile without role', async () => {
      const other = await t.createUser({ role: 'admin' });
      const res = await t
        .http()
        .put(`/users/${other.id}`)
        .set(...auth(adminToken))
        .send(profileOf(other, { name: 'Still Admin' }));
      expect(res.status).toBe(200);
      expect(res.body.role).toBe('admin');
    });

    it('answers 409 when the new email is taken, also in another letter case, and changes nothing', async () => {
      const { user, token } = await userWithToken();
      const other = await t.createUser();
      for (const email of [other.email, other.email.toUpperCase()]) {
        const res = await t
          .http()
          .put(`/users/${user.id}`)
          .set(...auth(token))
          .send(profileOf(user, { email, name: 'Changed', currentPassword: TEST_PASSWORD }));
        expectProblem(res, 409, `/users/${user.id}`);
      }
      const after = await t
        .http()
        .get(`/users/${user.id}`)
        .set(...auth(token));
      expect(after.body).toEqual({ ...user });
    });

    it('lets a user keep its own email in another letter case (no conflict with itself)', async () => {
      const { user, token } = await userWithToken();
      const res = await t
        .http()
        .put(`/users/${user.id}`)
        .set(...auth(token))
        .send(profileOf(user, { email: user.email.toUpperCase() }));
      expect(res.status).toBe(200);
    });

    it('changes the password when one is sent, and only then', async () => {
      const { user, token } = await userWithToken();
      const unchanged = await t
        .http()
        .put(`/users/${user.id}`)
        .set(...auth(token))
        .send(profileOf(user, { name: 'No Password Change' }));
      expect(unchanged.status).toBe(200);
      expect((await login(new Browser(t), user.email)).status).toBe(303);

      const newPassword = 'another long enough password';
      const res = await t
        .http()
        .put(`/users/${user.id}`)
        .set(...auth(token))
        .send(profileOf(user, { password: newPassword, currentPassword: TEST_PASSWORD }));
      expect(res.status).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(USER_KEYS);
      expect((await login(new Browser(t), user.email, newPassword)).status).toBe(303);
      expect((await login(new Browser(t), user.email, TEST_PASSWORD)).status).toBe(401);
    });

    it('replaces the whole profile: a body without a required field is 400 naming it', async () => {
      const { user, token } = await userWithToken();
      const res = await t
        .http()
        .put(`/users/${user.id}`)
        .set(...auth(token))
        .send({ email: user.email, name: user.name, gender: user.gender });
      expectValidationProblem(res, `/users/${user.id}`, ['age']);
    });

    it('needs users:write (403 insufficient_scope)', async () => {
      const { user, token } = await userWithToken(['users:read']);
      const res = await t
        .http()
        .put(`/users/${user.id}`)
        .set(...auth(token))
        .send(profileOf(user));
      expectProblem(res, 403, `/users/${user.id}`);
      expect(res.headers['www-authenticate']).toBe(bearerChallenge(t, 'error="insufficient_scope", scope="users:write"'));
    });
  });

  describe('DELETE /users/{userId}', () => {
    it('lets an admin delete a user: 204 with no body, then the user is 404', async () => {
      const user = await t.createUser();
      const res = await t
        .http()
        .delete(`/users/${user.id}`)
        .set(...auth(adminToken));
      expect(res.status).toBe(204);
      expect(res.text).toBe('');
      expectProblem(
        await t
          .http()
          .get(`/users/${user.id}`)
          .set(...auth(adminToken)),
        404,
        `/users/${user.id}`,
      );
      expectProblem(
        await t
          .http()
          .put(`/users/${user.id}`)
          .set(...auth(adminToken))
          .send(profileOf(user)),
        404,
        `/users/${user.id}`,
      );
      expectProblem(
        await t
          .http()
          .delete(`/users/${user.id}`)
          .set(...auth(adminToken)),
        404,
        `/users/${user.id}`,
      );
      expect((await listAll('')).map((u) => u.id)).not.toContain(user.id);
    });

    it('answers 403 problem+json when a user deletes itself or another user, and deletes nothing', async () => {
      const { user, token } = await userWithToken();
      const other = await t.createUser();
      expectProblem(
        await t
          .http()
          .delete(`/users/${user.id}`)
          .set(...auth(token)),
        403,
        `/users/${user.id}`,
      );
      expectProblem(
        await t
          .http()
          .delete(`/users/${other.id}`)
          .set(...auth(token)),
        403,
        `/users/${other.id}`,
      );
      expect(
        (
          await t
            .http()
            .get(`/users/${user.id}`)
            .set(...auth(adminToken))
        ).status,
      ).toBe(200);
      expect(
        (
          await t
            .http()
            .get(`/users/${other.id}`)
            .set(...auth(adminToken))
        ).status,
      ).toBe(200);
    });

    it('needs users:write (403 insufficient_scope)', async () => {
      const user = await t.createUser();
      const token = await t.token(admin.id, ['users:read']);
      const res = await t
        .http()
        .delete(`/users/${user.id}`)
        .set(...auth(token));
      expectProblem(res, 403, `/users/${user.id}`);
      expect(res.headers['www-authenticate']).toBe(bearerChallenge(t, 'error="insufficient_scope", scope="users:write"'));
    });

    it("deletes the user's orders, sessions, grants and refresh tokens", async () => {
      const { user, token } = await userWithToken();
      for (const item of ['first', 'second']) {
        const order = await t
          .http()
          .post(`/users/${user.id}/orders`)
          .set(...auth(token))
          .send(orderBody({ item }));
        expect(order.status).toBe(201);
      }
      const browser = new Browser(t);
      expect((await login(browser, user.email)).status).toBe(303);
      await issueTokens(t, { browser });
      const db = t.app.get(DataSource);
      const counts = () =>
        Promise.all([Order, Session, Grant, RefreshToken].map((entity) => db.getRepository(entity).count({ where: { userId: user.id } })));
      expect(await counts()).toEqual([2, 1, 1, 1]);

      expect(
        (
          await t
            .http()
            .delete(`/users/${user.id}`)
            .set(...auth(adminToken))
        ).status,
      ).toBe(204);
      expect(await counts()).toEqual([0, 0, 0, 0]);
      expectProblem(
        await t
          .http()
          .get(`/users/${user.id}/orders`)
          .set(...auth(adminToken)),
        404,
        `/users/${user.id}/orders`,
      );
    });

    it("makes the deleted user's access tokens answer 401 invalid_token", async () => {
      const { user, token } = await userWithToken();
      const issued = await issueTokens(t, { user });
      expect(
        (
          await t
            .http()
            .get('/api/resource')
            .set(...auth(issued.access))
        ).status,
      ).toBe(200);
      expect(
        (
          await t
            .http()
            .delete(`/users/${user.id}`)
            .set(...auth(adminToken))
        ).status,
      ).toBe(204);

      for (const [path, bearer] of [
        [`/users/${user.id}`, token],
        [`/users/${user.id}/orders`, token],
        [`/users/${user.id}`, issued.access],
        ['/api/resource', issued.access],
      ]) {
        const res = await t
          .http()
          .get(path)
          .set(...auth(bearer));
        expectProblem(res, 401, path);
        expect(res.headers['www-authenticate']).toBe(bearerChallenge(t, 'error="invalid_token"'));
      }
    });
  });

  it('never returns the password or its hash', async () => {
    const password = 'a secret that must not leak';
    const created = await t
      .http()
      .post('/users')
      .set(...auth(adminToken))
      .send(userBody({ password }));
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const newPassword = 'another secret that must not leak';
    const responses = [
      created,
      await t
        .http()
        .get(`/users/${id}`)
        .set(...auth(adminToken)),
      await t
        .http()
        .put(`/users/${id}`)
        .set(...auth(await t.token(id)))
        .send({ ...profileOf(created.body), password: newPassword, currentPassword: password }),
      await t
        .http()
        .get(`/users?limit=100&offset=0`)
        .set(...auth(adminToken)),
    ];
    for (const res of responses) {
      expect(res.status).toBeLessThan(300);
      expect(res.text).not.toContain(password);
      expect(res.text).not.toContain(newPassword);
      expect(res.text).not.toMatch(/password|argon2/i);
    }
  });
});

describe('users API: sorting (ties are broken by id)', () => {
  let t: TestApp;
  let adminToken: string;
  let everyone: UserResponseDto[];

  beforeAll(async () => {
    t = await createTestApp();
    // Names and emails that sort the same under byte order and any locale collation; ties in age and name.
    const admin = await t.createUser({ role: 'admin', name: 'Admin', email: 'admin@example.com', age: 40, gender: 'other' });
    adminToken = await t.token(admin.id);
    everyone = [admin];
    for (const [name, email, age, gender] of [
      ['Anna', 'anna@example.com', 30, 'female'],
      ['Bob', 'bert@example.com', 25, 'male'],
      ['Carl', 'carl@example.com', 30, 'male'],
      ['Bob', 'dora@example.com', 50, 'female'],
      ['Dora', 'fred@example.com', 25, 'other'],
      ['Eve', 'eve@example.com', 18, 'female'],
      ['Carl', 'gina@example.com', 30, 'male'],
    ] as const) {
      everyone.push(await t.createUser({ name, email, age, gender }));
    }
  });
  afterAll(() => t.close());

  const keys: Record<string, (u: UserResponseDto) => string | number> = {
    age: (u) => u.age,
    name: (u) => u.name,
    email: (u) => u.email,
    createdAt: (u) => Date.parse(u.createdAt),
  };

  for (const sort of Object.keys(keys)) {
    for (const order of ['asc', 'desc'] as const) {
      it(`sorts by ${sort} ${order}, ties broken by id ${order}`, async () => {
        const res = await t
          .http()
          .get(`/users?sort=${sort}&order=${order}&limit=100`)
          .set(...auth(adminToken));
        expect(res.status).toBe(200);
        expect(res.body.data.map((u: UserResponseDto) => u.id)).toEqual(sortedIds(everyone, keys[sort], order));
        expect(res.body.page).toEqual({ limit: 100, offset: 0, total: everyone.length });
      });
    }
  }

  it('sorts ascending when order is not given', async () => {
    const res = await t
      .http()
      .get('/users?sort=age&limit=100')
      .set(...auth(adminToken));
    expect(res.status).toBe(200);
    expect(res.body.data.map((u: UserResponseDto) => u.id)).toEqual(sortedIds(everyone, keys.age, 'asc'));
  });

  it('combines the gender filter with a sort', async () => {
    const res = await t
      .http()
      .get('/users?gender=male&sort=age&order=desc')
      .set(...auth(adminToken));
    expect(res.status).toBe(200);
    const males = everyone.filter((u) => u.gender === 'male');
    expect(res.body.data.map((u: UserResponseDto) => u.id)).toEqual(sortedIds(males, keys.age, 'desc'));
    expect(res.body.page).toEqual({ limit: 20, offset: 0, total: males.length });
  });

  it.each(['AGE', 'id', 'password', 'gender', 'updatedAt', 'created_at'])('rejects sort=%s with 400', async (sort) => {
    const res = await t
      .http()
      .get(`/users?sort=${sort}`)
      .set(...auth(adminToken));
    expectValidationProblem(res, '/users', ['sort']);
  });

  it.each(['ASC', 'descending', '1'])('rejects order=%s with 400', async (order) => {
    const res = await t
      .http()
      .get(`/users?order=${order}`)
      .set(...auth(adminToken));
    expectValidationProblem(res, '/users', ['order']);
  });
});

describe('users API: pagination over equal sort keys', () => {
  let t: TestApp;
  let adminToken: string;
  let everyone: UserResponseDto[];

  beforeAll(async () => {
    t = await createTestApp();
    const admin = await t.createUser({ role: 'admin', age: 30, gender: 'female', name: 'Same Name' });
    adminToken = await t.token(admin.id);
    everyone = [admin];
    const genders = ['female', 'male', 'other'] as const;
    // 25 users with the same age (and often the same createdAt millisecond): only the id tells them apart.
    for (let i = 0; i < 25; i++) everyone.push(await t.createUser({ age: 30, gender: genders[i % 3], name: 'Same Name' }));
  });
  afterAll(() => t.close());

  async function walk(query: string, limit: number): Promise<{ ids: string[]; totals: number[]; sizes: number[] }> {
    const ids: string[] = [];
    const totals: number[] = [];
    const sizes: number[] = [];
    for (let offset = 0; offset < 1000; offset += limit) {
      const res = await t
        .http()
        .get(`/users?limit=${limit}&offset=${offset}${query}`)
        .set(...auth(adminToken));
      expect(res.status).toBe(200);
      expect(res.body.page.limit).toBe(limit);
      expect(res.body.page.offset).toBe(offset);
      ids.push(...res.body.data.map((u: UserResponseDto) => u.id));
      totals.push(res.body.page.total);
      sizes.push(res.body.data.length);
      if (res.body.data.length < limit) break;
    }
    return { ids, totals, sizes };
  }

  for (const order of ['asc', 'desc'] as const) {
    for (const sort of ['age', 'name']) {
      it(`walks sort=${sort}&order=${order} with limit 7: every user exactly once, in id order`, async () => {
        const { ids, totals, sizes } = await walk(`&sort=${sort}&order=${order}`, 7);
        expect(sizes).toEqual([7, 7, 7, 5]);
        expect(new Set(ids).size).toBe(ids.length);
        expect(ids).toEqual(sortedIds(everyone, () => 0, order));
        expect(totals).toEqual([26, 26, 26, 26]);
      });
    }
  }

  it('returns the same pages when the walk is repeated', async () => {
    const first = await walk('&sort=age', 7);
    const second = await walk('&sort=age', 7);
    expect(second.ids).toEqual(first.ids);
  });

  it('walks without a sort key: every user exactly once', async () => {
    const { ids } = await walk('', 7);
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(everyone.map((u) => u.id).sort());
  });

  it.each(['female', 'male', 'other'])(
    'walks gender=%s with limit 4: exactly the users of that gender, page.total their number',
    async (gender) => {
      const expected = everyone.filter((u) => u.gender === gender);
      const { ids, totals } = await walk(`&gender=${gender}&sort=age&order=desc`, 4);
      expect(ids).toEqual(sortedIds(expected, () => 0, 'desc'));
      expect(new Set(totals)).toEqual(new Set([expected.length]));
    },
  );
});
