import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UserResponseDto } from '../../src/users/dto/user-response.dto';
import { orderBody, profileOf, userBody } from '../support/factories';
import { expectListsValues, expectProblem, expectValidationProblem } from '../support/problem';
import { captureQueries, touchingUsersOrOrders } from '../support/queries';
import { type TestApp, createTestApp } from '../support/test-app';

function auth(token: string): [string, string] {
  return ['Authorization', `Bearer ${token}`];
}

/** An address of exactly 254 characters that is still a valid email (64-character local part, 63-character labels). */
function longestEmail(): string {
  const local = 'a'.repeat(64);
  const domain = `${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(57)}.com`;
  return `${local}@${domain}`;
}

describe('input rules and the error format (RFC 9457)', () => {
  let t: TestApp;
  let admin: UserResponseDto;
  let adminToken: string;
  let user: UserResponseDto;
  let userToken: string;

  beforeAll(async () => {
    t = await createTestApp();
    admin = await t.createUser({ role: 'admin' });
    adminToken = await t.token(admin.id);
    user = await t.createUser();
    userToken = await t.token(user.id);
  });
  afterAll(() => t.close());

  async function totalUsers(): Promise<number> {
    const res = await t
      .http()
      .get('/users?limit=1')
      .set(...auth(adminToken));
    expect(res.status).toBe(200);
    return res.body.page.total;
  }

  async function emailExists(email: string): Promise<boolean> {
    for (let offset = 0; ; offset += 100) {
      const res = await t
        .http()
        .get(`/users?limit=100&offset=${offset}`)
        .set(...auth(adminToken));
      if (res.body.data.some((u: UserResponseDto) => u.email.toLowerCase() === email.toLowerCase())) return true;
      if (res.body.data.length < 100) return false;
    }
  }

  async function orderTotal(userId: string): Promise<number> {
    const res = await t
      .http()
      .get(`/users/${userId}/orders?limit=1`)
      .set(...auth(adminToken));
    expect(res.status).toBe(200);
    return res.body.page.total;
  }

  describe('bad input never reaches the database', () => {
    it('runs no query on users or orders for a malformed id, an unknown parameter, a bad query value or a bad body', async () => {
      const orders = `/users/${user.id}/orders`;
      const requests = [
        () =>
          t
            .http()
            .get('/users/not-a-uuid')
            .set(...auth(userToken)),
        () =>
          t
            .http()
            .get(`/users/${user.id}/orders/not-a-uuid`)
            .set(...auth(userToken)),
        () =>
          t
            .http()
            .get(`/users/${user.id}?x=1`)
            .set(...auth(userToken)),
        () =>
          t
            .http()
            .get(`${orders}?sort=${encodeURIComponent('total_cents; DROP TABLE orders')}`)
            .set(...auth(userToken)),
        () =>
          t
            .http()
            .get(`${orders}?limit=1000`)
            .set(...auth(userToken)),
        () =>
          t
            .http()
            .post(orders)
            .set(...auth(userToken))
            .send(orderBody({ quantity: 'many' })),
        () =>
          t
            .http()
            .put(`/users/${user.id}`)
            .set(...auth(userToken))
            .send(userBody({ age: -1 })),
      ];
      for (const send of requests) {
        let status = 0;
        const queries = await captureQueries(t, async () => {
          status = (await send()).status;
        });
        expect(status).toBe(400);
        expect(touchingUsersOrOrders(queries)).toEqual([]);
      }
    });

    it('never puts a rejected SQL fragment into a query, even on an admin route that looks up the caller first', async () => {
      const fragment = 'age;DROP TABLE users';
      let status = 0;
      const queries = await captureQueries(t, async () => {
        status = (
          await t
            .http()
            .get(`/users?sort=${encodeURIComponent(fragment)}`)
            .set(...auth(adminToken))
        ).status;
      });
      expect(status).toBe(400);
      expect(queries.filter((q) => JSON.stringify(q).includes('DROP'))).toEqual([]);
    });

    it('captures the queries of a valid request (control for the tests above)', async () => {
      const queries = await captureQueries(t, () =>
        t
          .http()
          .get(`/users/${user.id}/orders`)
          .set(...auth(userToken)),
      );
      expect(touchingUsersOrOrders(queries).length).toBeGreaterThan(0);
    });
  });

  describe('unknown query parameters', () => {
    it('rejects an unknown parameter on a list route, naming it', async () => {
      expectValidationProblem(
        await t
          .http()
          .get('/users?foo=1')
          .set(...auth(adminToken)),
        '/users',
        ['foo'],
      );
      const orders = `/users/${user.id}/orders`;
      expectValidationProblem(
        await t
          .http()
          .get(`${orders}?page=2`)
          .set(...auth(userToken)),
        orders,
        ['page'],
      );
    });

    it('names every unknown parameter along with the bad known ones', async () => {
      const res = await t
        .http()
        .get('/users?foo=1&bar=2&limit=0')
        .set(...auth(adminToken));
      expectValidationProblem(res, '/users', ['foo', 'bar', 'limit']);
    });

    it.each([
      ['get', '/users/{self}'],
      ['get', '/users/{self}/orders/{random}'],
      ['get', '/api/resource'],
      ['post', '/users'],
      ['put', '/users/{self}'],
      ['delete', '/users/{other}'],
      ['post', '/users/{self}/orders'],
    ] as const)('rejects ?x=1 on %s %s, a route that takes no query, and changes nothing', async (method, template) => {
      const other = await t.createUser();
      const path = template.replace('{self}', user.id).replace('{other}', other.id).replace('{random}', randomUUID());
      const ordersBefore = await orderTotal(user.id);
      let req = t
        .http()
        [method](`${path}?x=1`)
        .set(...auth(adminToken));
      if (method === 'post' || method === 'put') req = req.send(path.endsWith('/orders') ? orderBody() : userBody({ email: user.email }));
      expectValidationProblem(await req, path, ['x']);
      expect(
        (
          await t
            .http()
            .get(`/users/${other.id}`)
            .set(...auth(adminToken))
        ).status,
      ).toBe(200);
      expect(
        (
          await t
            .http()
            .get(`/users/${user.id}`)
            .set(...auth(adminToken))
        ).body,
      ).toEqual({ ...user });
      expect(await orderTotal(user.id)).toBe(ordersBefore);
    });

    it.each([
      ['limit=1&limit=2', 'limit'],
      ['gender=male&gender=female', 'gender'],
      ['sort=age&sort=name', 'sort'],
      ['order=asc&order=asc', 'order'],
    ])('rejects a repeated parameter (%s) with 400', async (query, field) => {
      expectValidationProblem(
        await t
          .http()
          .get(`/users?${query}`)
          .set(...auth(adminToken)),
        '/users',
        [field],
      );
    });

    it.each(['gender[]=male', 'gender[0]=male', 'limit[]=1', 'page[limit]=1', 'gender[$ne]=x'])(
      'rejects the bracketed parameter %s with 400',
      async (query) => {
        const res = await t
          .http()
          .get(`/users?${query}`)
          .set(...auth(adminToken));
        expectValidationProblem(res, '/users', [decodeURIComponent(query.split('=')[0])]);
      },
    );

    it('rejects a repeated status on the orders list', async () => {
      const path = `/users/${user.id}/orders`;
      expectValidationProblem(
        await t
          .http()
          .get(`${path}?status=paid&status=pending`)
          .set(...auth(userToken)),
        path,
        ['status'],
      );
    });
  });

  describe('repeated query parameters', () => {
    it('answers 400 naming each parameter given twice on the users and audit lists, with the message that says so', async () => {
      const users = await t
        .http()
        .get('/users?limit=5&limit=6&sort=age&sort=name&offset=0')
        .set(...auth(adminToken));
      expect(expectValidationProblem(users, '/users', ['limit', 'sort'])).toEqual({
        limit: 'limit must be given once',
        sort: 'sort must be given once',
      });
      const audit = await t
        .http()
        .get('/admin/audit-events?client_id=a&client_id=b')
        .set(...auth(adminToken));
      expect(expectValidationProblem(audit, '/admin/audit-events', ['client_id'])).toEqual({ client_id: 'client_id must be given once' });
    });
  });

  describe('query values', () => {
    it.each([
      ['limit', ['0', '101', '-5', '1.5', '1e1', '0x10', 'abc', '', ' 5', '99999999999999999999']],
      ['offset', ['-1', '1.5', 'abc', '']],
    ])('rejects bad values of %s', async (field, values) => {
      for (const value of values) {
        const res = await t
          .http()
          .get(`/users?${field}=${encodeURIComponent(value)}`)
          .set(...auth(adminToken));
        expectValidationProblem(res, '/users', [field]);
      }
    });

    it('lists every allowed value of gender, sort and order in their errors', async () => {
      const res = await t
        .http()
        .get('/users?gender=robot&sort=height&order=up')
        .set(...auth(adminToken));
      const errors = expectValidationProblem(res, '/users', ['gender', 'sort', 'order']);
      expectListsValues(errors.gender, ['female', 'male', 'other']);
      expectListsValues(errors.sort, ['age', 'name', 'email', 'createdAt']);
      expectListsValues(errors.order, ['asc', 'desc']);
    });

    it('lists every allowed value of status, sort and order on the orders list', async () => {
      const path = `/users/${user.id}/orders`;
      const res = await t
        .http()
        .get(`${path}?status=lost&sort=item&order=random`)
        .set(...auth(userToken));
      const errors = expectValidationProblem(res, path, ['status', 'sort', 'order']);
      expectListsValues(errors.status, ['pending', 'paid', 'shipped', 'cancelled']);
      expectListsValues(errors.sort, ['createdAt', 'totalCents']);
      expectListsValues(errors.order, ['asc', 'desc']);
    });

    it.each([
      ['sort', 'age;DROP TABLE users'],
      ['sort', 'age DESC'],
      ['sort', 'age, (SELECT 1)'],
      ['sort', 'u.password_hash'],
      ['order', 'asc; DELETE FROM users'],
      ['gender', "' OR 1=1 --"],
      ['gender', "male' OR '1'='1"],
      ['limit', '1; DROP TABLE users'],
      ['offset', '0 UNION SELECT * FROM users'],
    ])('rejects the SQL fragment %s=%s with 400 and leaves the users in place', async (field, value) => {
      const before = await totalUsers();
      const res = await t
        .http()
        .get(`/users?${field}=${encodeURIComponent(value)}`)
        .set(...auth(adminToken));
      expectValidationProblem(res, '/users', [field]);
      expect(await totalUsers()).toBe(before);
      expect(
        (
          await t
            .http()
            .get(`/users/${user.id}`)
            .set(...auth(adminToken))
        ).status,
      ).toBe(200);
    });

    it('rejects SQL fragments in the orders filters with 400, and the orders stay', async () => {
      const path = `/users/${user.id}/orders`;
      await t
        .http()
        .post(path)
        .set(...auth(userToken))
        .send(orderBody());
      const before = await orderTotal(user.id);
      for (const query of [
        `status=${encodeURIComponent("pending' OR '1'='1")}`,
        `sort=${encodeURIComponent('total_cents; DROP TABLE orders')}`,
      ]) {
        expect(
          (
            await t
              .http()
              .get(`${path}?${query}`)
              .set(...auth(userToken))
          ).status,
        ).toBe(400);
      }
      expect(await orderTotal(user.id)).toBe(before);
    });

    it('stores SQL-looking text in a valid field verbatim, and the table survives', async () => {
      const name = "Robert'); DROP TABLE users;--";
      const res = await t
        .http()
        .post('/users')
        .set(...auth(adminToken))
        .send(userBody({ name }));
      expect(res.status).toBe(201);
      expect(res.body.name).toBe(name);
      const fetched = await t
        .http()
        .get(`/users/${res.body.id}`)
        .set(...auth(adminToken));
      expect(fetched.body.name).toBe(name);
      expect(await totalUsers()).toBeGreaterThan(2);
    });
  });

  describe('malformed ids', () => {
    it.each(['123', 'not-a-uuid', `${randomUUID()}0`, randomUUID().replace(/-/g, ''), "1'%20OR%20'1'%3D'1", '%00', '..%2F..%2Fetc'])(
      'answers 400 naming userId for /users/%s',
      async (id) => {
        const path = `/users/${id}`;
        const errors = expectValidationProblem(
          await t
            .http()
            .get(path)
            .set(...auth(adminToken)),
          path,
          ['userId'],
        );
        expect(errors.userId).toMatch(/userId/);
      },
    );

    it('names userId for a malformed id on every users and orders route', async () => {
      for (const [method, path, body] of [
        ['get', '/users/xyz', undefined],
        ['put', '/users/xyz', userBody()],
        ['delete', '/users/xyz', undefined],
        ['get', '/users/xyz/orders', undefined],
        ['post', '/users/xyz/orders', orderBody()],
        ['get', `/users/xyz/orders/${randomUUID()}`, undefined],
      ] as const) {
        let req = t
          .http()
          [method](path)
          .set(...auth(adminToken));
        if (body) req = req.send(body);
        expectValidationProblem(await req, path, ['userId']);
      }
    });

    it('answers 400 naming orderId for a malformed order id', async () => {
      for (const id of ['1', 'abc', `${randomUUID()}x`, "'%20OR%201%3D1%20--"]) {
        const path = `/users/${user.id}/orders/${id}`;
        const errors = expectValidationProblem(
          await t
            .http()
            .get(path)
            .set(...auth(userToken)),
          path,
          ['orderId'],
        );
        expect(errors.orderId).toMatch(/orderId/);
      }
    });
  });

  describe('bodies', () => {
    it('rejects an unknown body field, naming it, and creates nothing', async () => {
      const body = userBody({ isAdmin: true });
      expectValidationProblem(
        await t
          .http()
          .post('/users')
          .set(...auth(adminToken))
          .send(body),
        '/users',
        ['isAdmin'],
      );
      expect(await emailExists(body.email)).toBe(false);
      const put = await t
        .http()
        .put(`/users/${user.id}`)
        .set(...auth(userToken))
        .send(userBody({ email: user.email, id: randomUUID(), createdAt: 'x' }));
      expectValidationProblem(put, `/users/${user.id}`, ['id', 'createdAt']);
      const orders = `/users/${user.id}/orders`;
      const before = await orderTotal(user.id);
      expectValidationProblem(
        await t
          .http()
          .post(orders)
          .set(...auth(userToken))
          .send(orderBody({ discount: 5, userId: admin.id })),
        orders,
        ['discount', 'userId'],
      );
      expect(await orderTotal(user.id)).toBe(before);
    });

    it('names every missing field of an empty user body', async () => {
      const res = await t
        .http()
        .post('/users')
        .set(...auth(adminToken))
        .send({});
      const errors = expectValidationProblem(res, '/users', ['email', 'password', 'name', 'gender', 'age']);
      expectListsValues(errors.gender, ['female', 'male', 'other']);
    });

    it('names every bad field at once, and lists the allowed values of gender and role', async () => {
      const res = await t
        .http()
        .post('/users')
        .set(...auth(adminToken))
        .send({ email: 'nope', password: 'short', name: '', gender: 'robot', age: 200, role: 'root', extra: 1 });
      const errors = expectValidationProblem(res, '/users', ['email', 'password', 'name', 'gender', 'age', 'role', 'extra']);
      expectListsValues(errors.gender, ['female', 'male', 'other']);
      expectListsValues(errors.role, ['user', 'admin']);
    });

    it('names every missing field of an empty order body', async () => {
      const path = `/users/${user.id}/orders`;
      expectValidationProblem(
        await t
          .http()
          .post(path)
          .set(...auth(userToken))
          .send({}),
        path,
        ['item', 'quantity', 'unitPriceCents', 'currency'],
      );
    });

    it.each([
      ['email', [123, null, true, 'not-an-email', 'a@', '@example.com', `x${longestEmail()}`, ['a@example.com']]],
      ['password', ['x'.repeat(11), 'x'.repeat(129), 123456789012345, null, { length: 20 }]],
      ['name', ['', 'x'.repeat(101), 42, null, ['Name']]],
      ['gender', ['Female', 'MALE', 'unknown', '', 1, null]],
      ['age', ['30', 30.5, -1, 151, null, true, '', [30]]],
      ['role', ['superuser', 'Admin', '', 1, null]],
    ])('rejects bad values of the user field %s with 400 naming it', async (field, values) => {
      for (const value of values) {
        const res = await t
          .http()
          .post('/users')
          .set(...auth(adminToken))
          .send(userBody({ [field]: value }));
        expectValidationProblem(res, '/users', [field]);
      }
    });

    it('rejects null for the optional fields password, currentPassword and role on PUT with 400 (absent is not null), and changes nothing', async () => {
      const target = await t.createUser();
      const profile = profileOf(target, { name: 'Changed' });
      for (const field of ['password', 'currentPassword', 'role']) {
        const res = await t
          .http()
          .put(`/users/${target.id}`)
          .set(...auth(adminToken))
          .send({ ...profile, [field]: null });
        expectValidationProblem(res, `/users/${target.id}`, [field]);
      }
      expect(
        (
          await t
            .http()
            .get(`/users/${target.id}`)
            .set(...auth(adminToken))
        ).body,
      ).toEqual({ ...target });
    });

    it('accepts the user field bounds: age 0 and 150, name of 1 and 100, password of 12 and 128, email of 254 characters', async () => {
      expect(longestEmail()).toHaveLength(254);
      for (const overrides of [
        { age: 0, name: 'x', password: 'x'.repeat(12) },
        { age: 150, name: 'y'.repeat(100), password: 'y'.repeat(128) },
        { email: longestEmail() },
      ]) {
        const res = await t
          .http()
          .post('/users')
          .set(...auth(adminToken))
          .send(userBody(overrides));
        expect(res.status, JSON.stringify(res.body)).toBe(201);
        expect(res.body).toMatchObject(Object.fromEntries(Object.entries(overrides).filter(([k]) => k !== 'password')));
      }
    });

    it.each([
      ['item', ['', 'x'.repeat(201), 5, null]],
      ['quantity', [0, 10_001, 1.5, '2', null, -1]],
      ['unitPriceCents', [-1, 1_000_000_001, 1.5, '100', null]],
      ['currency', ['usd', 'US', 'EURO', 978, 'E1R', ' EUR', null]],
    ])('rejects bad values of the order field %s with 400 naming it, and creates nothing', async (field, values) => {
      const path = `/users/${user.id}/orders`;
      const before = await orderTotal(user.id);
      for (const value of values) {
        const res = await t
          .http()
          .post(path)
          .set(...auth(userToken))
          .send(orderBody({ [field]: value }));
        expectValidationProblem(res, path, [field]);
      }
      expect(await orderTotal(user.id)).toBe(before);
    });

    it('accepts the order field bounds: quantity 1 and 10000, unitPriceCents 0 and 1000000000, item of 1 and 200 characters', async () => {
      const path = `/users/${user.id}/orders`;
      for (const overrides of [
        { quantity: 1, unitPriceCents: 0, item: 'x', currency: 'JPY' },
        { quantity: 10_000, unitPriceCents: 1_000_000_000, item: 'y'.repeat(200) },
      ]) {
        const res = await t
          .http()
          .post(path)
          .set(...auth(userToken))
          .send(orderBody(overrides));
        expect(res.status, JSON.stringify(res.body)).toBe(201);
        expect(res.body).toMatchObject(overrides);
      }
    });

    it.each([
      ['a truncated object', '{"email":'],
      ['unquoted keys', '{email: "a@example.com"}'],
      ['a trailing comma', '{"name":"x",}'],
      ['single quotes', "{'name':'x'}"],
      ['a bare null', 'null'],
      ['a bare string', '"text"'],
      ['a bare number', '42'],
      ['two objects', '{}{}'],
    ])('answers a body that is not a JSON object (%s) with 400 problem+json', async (_label, raw) => {
      const res = await t
        .http()
        .post('/users')
        .set(...auth(adminToken))
        .set('Content-Type', 'application/json')
        .send(raw);
      expectProblem(res, 400, '/users');
    });

    it('answers a JSON array body with 400 problem+json', async () => {
      for (const raw of ['[]', JSON.stringify([userBody()])]) {
        const res = await t
          .http()
          .post('/users')
          .set(...auth(adminToken))
          .set('Content-Type', 'application/json')
          .send(raw);
        expectProblem(res, 400, '/users', { errors: true });
      }
    });

    it('answers a body larger than 100 kB with 413 problem+json, also when it is not valid JSON', async () => {
      const big = userBody({ name: 'x'.repeat(101 * 1024) });
      const res = await t
        .http()
        .post('/users')
        .set(...auth(adminToken))
        .send(big);
      expectProblem(res, 413, '/users');
      const junk = await t
        .http()
        .post('/users')
        .set(...auth(adminToken))
        .set('Content-Type', 'application/json')
        .send(`{${'"'.repeat(150_000)}`);
      expectProblem(junk, 413, '/users');
      const orders = `/users/${user.id}/orders`;
      expectProblem(
        await t
          .http()
          .post(orders)
          .set(...auth(userToken))
          .send(orderBody({ item: 'x'.repeat(200_000) })),
        413,
        orders,
      );
    });

    it('answers a body just under 100 kB with a validation error, not 413', async () => {
      const res = await t
        .http()
        .post('/users')
        .set(...auth(adminToken))
        .send(userBody({ name: 'x'.repeat(95 * 1024) }));
      expectValidationProblem(res, '/users', ['name']);
    });

    it('answers a form body larger than 100 kB with 413 problem+json', async () => {
      const path = `/users/${user.id}/orders`;
      const res = await t
        .http()
        .post(path)
        .set(...auth(userToken))
        .type('form')
        .send({ item: 'x'.repeat(150_000) });
      expectProblem(res, 413, path);
    });
  });

  describe('prototype keys in input', () => {
    const raw = (extra: string) => {
      const body = JSON.stringify(userBody({ name: 'Valid Name' }));
      return `${body.slice(0, -1)},${extra}}`;
    };

    it.each([
      ['__proto__', '"__proto__":{"polluted":true,"role":"admin"}'],
      ['constructor', '"constructor":{"prototype":{"polluted":true}}'],
      ['prototype', '"prototype":{"polluted":true}'],
    ])('rejects a %s key in a user body with 400 naming it, and pollutes nothing', async (field, extra) => {
      const before = await totalUsers();
      const res = await t
        .http()
        .post('/users')
        .set(...auth(adminToken))
        .set('Content-Type', 'application/json')
        .send(raw(extra));
      expectValidationProblem(res, '/users', [field]);
      expect(await totalUsers()).toBe(before);
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      expect(Object.prototype).not.toHaveProperty('polluted');
    });

    it('rejects prototype keys in PUT and order bodies, and nested ones under a field', async () => {
      const put = await t
        .http()
        .put(`/users/${user.id}`)
        .set(...auth(userToken))
        .set('Content-Type', 'application/json')
        .send(`{"email":"${user.email}","name":"n","gender":"male","age":1,"__proto__":{"role":"admin"}}`);
      expectValidationProblem(put, `/users/${user.id}`, ['__proto__']);
      const me = await t
        .http()
        .get(`/users/${user.id}`)
        .set(...auth(userToken));
      expect(me.body.role).toBe('user');

      const path = `/users/${user.id}/orders`;
      const order = await t
        .http()
        .post(path)
        .set(...auth(userToken))
        .set('Content-Type', 'application/json')
        .send('{"item":"x","quantity":1,"unitPriceCents":1,"currency":"EUR","constructor":{"prototype":{"polluted":1}}}');
      expectValidationProblem(order, path, ['constructor']);

      const nested = await t
        .http()
        .post('/users')
        .set(...auth(adminToken))
        .set('Content-Type', 'application/json')
        .send(raw('"x":1').replace('"Valid Name"', '{"__proto__":{"polluted":true}}'));
      expect(nested.status).toBe(400);
      expect(nested.body.errors.map((e: { field: string }) => e.field)).toEqual(expect.arrayContaining(['name', 'x']));
      expect(Object.prototype).not.toHaveProperty('polluted');
    });

    it.each(['__proto__', 'constructor', 'prototype', '__proto__[polluted]', 'constructor[prototype][polluted]'])(
      'rejects the query parameter %s with 400, on list routes and routes without a query',
      async (name) => {
        const query = `${encodeURIComponent(name)}=1`;
        const list = await t
          .http()
          .get(`/users?${query}`)
          .set(...auth(adminToken));
        expectValidationProblem(list, '/users', [name]);
        const orders = `/users/${user.id}/orders`;
        expectValidationProblem(
          await t
            .http()
            .get(`${orders}?${query}`)
            .set(...auth(userToken)),
          orders,
          [name],
        );
        const single = `/users/${user.id}`;
        expectValidationProblem(
          await t
            .http()
            .get(`${single}?${query}`)
            .set(...auth(userToken)),
          single,
          [name],
        );
        expect(Object.prototype).not.toHaveProperty('polluted');
      },
    );
  });

  describe('the error format', () => {
    it('sends X-Request-Id on every answer, error or not, and a new one for each request', async () => {
      const other = await t.createUser();
      const responses = [
        await t
          .http()
          .get('/users')
          .set(...auth(adminToken)),
        await t
          .http()
          .post('/users')
          .set(...auth(adminToken))
          .send(userBody()),
        await t
          .http()
          .delete(`/users/${other.id}`)
          .set(...auth(adminToken)),
        await t
          .http()
          .get('/users?limit=0')
          .set(...auth(adminToken)),
        await t.http().get('/users'),
        await t
          .http()
          .get('/users')
          .set(...auth(userToken)),
        await t
          .http()
          .get(`/users/${randomUUID()}`)
          .set(...auth(adminToken)),
        await t
          .http()
          .post('/users')
          .set(...auth(adminToken))
          .send(userBody({ email: admin.email })),
        await t
          .http()
          .post('/users')
          .set(...auth(adminToken))
          .send(userBody({ name: 'x'.repeat(200_000) })),
        await t.http().get('/no-such-route'),
      ];
      expect(responses.map((r) => r.status)).toEqual([200, 201, 204, 400, 401, 403, 404, 409, 413, 404]);
      const ids = responses.map((r) => r.headers['x-request-id']);
      for (const id of ids) expect(id).toEqual(expect.stringMatching(/^\S{8,}$/));
      expect(new Set(ids).size).toBe(ids.length);
    });

    it('gives 400, 401, 403, 404 and 409 the problem body: exactly type, title, status, detail, instance', async () => {
      expectProblem(
        await t
          .http()
          .get('/users?limit=0')
          .set(...auth(adminToken)),
        400,
        '/users',
        { errors: true },
      );
      expectProblem(await t.http().get('/users'), 401, '/users');
      expectProblem(
        await t
          .http()
          .get('/users')
          .set(...auth(userToken)),
        403,
        '/users',
      );
      const missing = `/users/${randomUUID()}`;
      expectProblem(
        await t
          .http()
          .get(missing)
          .set(...auth(adminToken)),
        404,
        missing,
      );
      expectProblem(
        await t
          .http()
          .post('/users')
          .set(...auth(adminToken))
          .send(userBody({ email: admin.email })),
        409,
        '/users',
      );
    });

    it('sets instance to the request path, without the query string', async () => {
      const res = await t
        .http()
        .get('/users?limit=0&offset=1')
        .set(...auth(adminToken));
      expect(res.body.instance).toBe('/users');
    });

    it('answers an unknown route with 404 problem+json, with or without a token', async () => {
      for (const path of ['/no-such-route', '/users/extra/segments/here/too', '/api', '/api/resource/x']) {
        expectProblem(await t.http().get(path), 404, path);
        expectProblem(
          await t
            .http()
            .get(path)
            .set(...auth(adminToken)),
          404,
          path,
        );
      }
      expectProblem(
        await t
          .http()
          .post('/no-such-route')
          .set(...auth(adminToken))
          .send({}),
        404,
        '/no-such-route',
      );
    });

    it('answers a method the route does not have with a 4xx problem, never 2xx or 5xx', async () => {
      for (const res of [
        await t
          .http()
          .patch(`/users/${user.id}`)
          .set(...auth(adminToken))
          .send({ name: 'x' }),
        await t
          .http()
          .delete('/users')
          .set(...auth(adminToken)),
        await t
          .http()
          .put(`/users/${user.id}/orders`)
          .set(...auth(adminToken))
          .send(orderBody()),
      ]) {
        expect(res.status).toBeGreaterThanOrEqual(400);
        expect(res.status).toBeLessThan(500);
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      }
    });
  });
});
