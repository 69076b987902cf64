import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { bearerChallenge } from '../support/oauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Scope } from '../../src/auth/scopes';
import type { OrderResponseDto } from '../../src/orders/dto/order-response.dto';
import { Order, type OrderStatus } from '../../src/orders/order.entity';
import type { UserResponseDto } from '../../src/users/dto/user-response.dto';
import { orderBody } from '../support/factories';
import { expectProblem, expectValidationProblem } from '../support/problem';
import { ALL_SCOPES, type TestApp, createTestApp } from '../support/test-app';

const ORDER_KEYS = ['createdAt', 'currency', 'id', 'item', 'quantity', 'status', 'totalCents', 'unitPriceCents', 'userId'];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

function auth(token: string): [string, string] {
  return ['Authorization', `Bearer ${token}`];
}

function ids(rows: { id: string }[]): string[] {
  return rows.map((row) => row.id);
}

/** The order the contract demands of the database: by the key, then by id, both in the given direction. */
function sortedIds(rows: OrderResponseDto[], key: (o: OrderResponseDto) => number, order: 'asc' | 'desc'): string[] {
  const sign = order === 'asc' ? 1 : -1;
  return [...rows].sort((a, b) => (key(a) !== key(b) ? (key(a) - key(b)) * sign : (a.id < b.id ? -1 : 1) * sign)).map((o) => o.id);
}

describe('orders API', () => {
  let t: TestApp;
  let admin: UserResponseDto;
  let adminToken: string;

  beforeAll(async () => {
    t = await createTestApp();
    admin = await t.createUser({ role: 'admin' });
    adminToken = await t.token(admin.id);
  });
  afterAll(() => t.close());

  async function userWithToken(scopes: Scope[] | string = ALL_SCOPES) {
    const user = await t.createUser();
    return { user, token: await t.token(user.id, scopes) };
  }

  async function placeOrder(userId: string, token: string, overrides: Record<string, unknown> = {}): Promise<OrderResponseDto> {
    const res = await t
      .http()
      .post(`/users/${userId}/orders`)
      .set(...auth(token))
      .send(orderBody(overrides));
    expect(res.status).toBe(201);
    return res.body;
  }

  async function orderCount(userId: string): Promise<number> {
    return t.app.get(DataSource).getRepository(Order).count({ where: { userId } });
  }

  describe('POST /users/{userId}/orders', () => {
    it('creates a pending order for the caller: 201, Location, totalCents = quantity × unitPriceCents', async () => {
      const { user, token } = await userWithToken(['orders:write', 'orders:read']);
      const res = await t
        .http()
        .post(`/users/${user.id}/orders`)
        .set(...auth(token))
        .send(orderBody({ item: 'Blue pen', quantity: 3, unitPriceCents: 1250, currency: 'EUR' }));
      expect(res.status).toBe(201);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(Object.keys(res.body).sort()).toEqual(ORDER_KEYS);
      expect(res.body).toEqual({
        id: expect.stringMatching(UUID),
        userId: user.id,
        item: 'Blue pen',
        quantity: 3,
        unitPriceCents: 1250,
        currency: 'EUR',
        totalCents: 3750,
        status: 'pending',
        createdAt: expect.stringMatching(ISO),
      });
      expect(res.headers.location).toBe(`/users/${user.id}/orders/${res.body.id}`);
      const fetched = await t
        .http()
        .get(res.headers.location)
        .set(...auth(token));
      expect(fetched.status).toBe(200);
      expect(fetched.body).toEqual(res.body);
    });

    it.each([
      [1, 0, 0],
      [1, 1, 1],
      [7, 333, 2331],
      [10_000, 1_000_000_000, 10_000_000_000_000],
    ])('computes totalCents for quantity %i × unitPriceCents %i = %i exactly', async (quantity, unitPriceCents, totalCents) => {
      const { user, token } = await userWithToken();
      const order = await placeOrder(user.id, token, { quantity, unitPriceCents });
      expect(order.totalCents).toBe(totalCents);
      const fetched = await t
        .http()
        .get(`/users/${user.id}/orders/${order.id}`)
        .set(...auth(token));
      expect(fetched.body.totalCents).toBe(totalCents);
      expect(fetched.body.unitPriceCents).toBe(unitPriceCents);
    });

    it('lets an admin create an order for another user', async () => {
      const user = await t.createUser();
      const res = await t
        .http()
        .post(`/users/${user.id}/orders`)
        .set(...auth(adminToken))
        .send(orderBody());
      expect(res.status).toBe(201);
      expect(res.body.userId).toBe(user.id);
      expect(res.headers.location).toBe(`/users/${user.id}/orders/${res.body.id}`);
      expect(await orderCount(user.id)).toBe(1);
    });

    it("answers 404 when a user creates an order under another user's path, and creates nothing", async () => {
      const { token } = await userWithToken();
      const other = await t.createUser();
      const res = await t
        .http()
        .post(`/users/${other.id}/orders`)
        .set(...auth(token))
        .send(orderBody());
      expectProblem(res, 404, `/users/${other.id}/orders`);
      expect(await orderCount(other.id)).toBe(0);
    });

    it('answers 404 to an admin creating an order for a user that does not exist', async () => {
      const id = randomUUID();
      const res = await t
        .http()
        .post(`/users/${id}/orders`)
        .set(...auth(adminToken))
        .send(orderBody());
      expectProblem(res, 404, `/users/${id}/orders`);
      expect(await orderCount(id)).toBe(0);
    });

    it('rejects status and totalCents in the body as unknown fields (400): the server sets them', async () => {
      const { user, token } = await userWithToken();
      const res = await t
        .http()
        .post(`/users/${user.id}/orders`)
        .set(...auth(token))
        .send(orderBody({ status: 'paid', totalCents: 1 }));
      expectValidationProblem(res, `/users/${user.id}/orders`, ['status', 'totalCents']);
      expect(await orderCount(user.id)).toBe(0);
    });

    it('answers 403 insufficient_scope with scope="orders:write" to a token with only orders:read', async () => {
      const { user, token } = await userWithToken(['orders:read']);
      const res = await t
        .http()
        .post(`/users/${user.id}/orders`)
        .set(...auth(token))
        .send(orderBody());
      expectProblem(res, 403, `/users/${user.id}/orders`);
      expect(res.headers['www-authenticate']).toBe(bearerChallenge(t, 'error="insufficient_scope", scope="orders:write"'));
      expect(await orderCount(user.id)).toBe(0);
    });

    it('answers 403 insufficient_scope to an admin token with only users scopes', async () => {
      const user = await t.createUser();
      const token = await t.token(admin.id, ['users:read', 'users:write']);
      const res = await t
        .http()
        .post(`/users/${user.id}/orders`)
        .set(...auth(token))
        .send(orderBody());
      expectProblem(res, 403, `/users/${user.id}/orders`);
      expect(res.headers['www-authenticate']).toBe(bearerChallenge(t, 'error="insufficient_scope", scope="orders:write"'));
    });
  });

  describe('GET /users/{userId}/orders', () => {
    it("lists the caller's orders with page {limit 20, offset 0, total}", async () => {
      const { user, token } = await userWithToken(['orders:read', 'orders:write']);
      const placed = [
        await placeOrder(user.id, token, { item: 'a' }),
        await placeOrder(user.id, token, { item: 'b' }),
        await placeOrder(user.id, token, { item: 'c' }),
      ];
      const res = await t
        .http()
        .get(`/users/${user.id}/orders`)
        .set(...auth(token));
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(Object.keys(res.body).sort()).toEqual(['data', 'page']);
      expect(res.body.page).toEqual({ limit: 20, offset: 0, total: 3 });
      expect(ids(res.body.data).sort()).toEqual(ids(placed).sort());
      for (const order of res.body.data) expect(order).toEqual(placed.find((p) => p.id === order.id));
    });

    it('answers an empty list for a user without orders', async () => {
      const { user, token } = await userWithToken(['orders:read']);
      const res = await t
        .http()
        .get(`/users/${user.id}/orders`)
        .set(...auth(token));
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ data: [], page: { limit: 20, offset: 0, total: 0 } });
    });

    it("lists only the path user's orders, never another user's", async () => {
      const a = await userWithToken();
      const b = await userWithToken();
      const aOrder = await placeOrder(a.user.id, a.token);
      const bOrder = await placeOrder(b.user.id, b.token);
      const res = await t
        .http()
        .get(`/users/${a.user.id}/orders?limit=100`)
        .set(...auth(adminToken));
      expect(ids(res.body.data)).toEqual([aOrder.id]);
      expect(ids(res.body.data)).not.toContain(bOrder.id);
      expect(res.body.page.total).toBe(1);
    });

    it("lets an admin list another user's orders", async () => {
      const { user, token } = await userWithToken();
      const order = await placeOrder(user.id, token);
      const res = await t
        .http()
        .get(`/users/${user.id}/orders`)
        .set(...auth(adminToken));
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual([order]);
    });

    it("answers 404 when a user lists another user's orders, exactly as for an unknown user", async () => {
      const { token } = await userWithToken();
      const other = await userWithToken();
      await placeOrder(other.user.id, other.token);
      const foreign = await t
        .http()
        .get(`/users/${other.user.id}/orders`)
        .set(...auth(token));
      expectProblem(foreign, 404, `/users/${other.user.id}/orders`);
      const missingId = randomUUID();
      const missing = await t
        .http()
        .get(`/users/${missingId}/orders`)
        .set(...auth(token));
      expectProblem(missing, 404, `/users/${missingId}/orders`);
      expect({ ...foreign.body, instance: undefined }).toEqual({ ...missing.body, instance: undefined });
    });

    it('answers 404 to an admin for the orders of a user that does not exist', async () => {
      const id = randomUUID();
      expectProblem(
        await t
          .http()
          .get(`/users/${id}/orders`)
          .set(...auth(adminToken)),
        404,
        `/users/${id}/orders`,
      );
    });

    it('filters by status', async () => {
      const { user, token } = await userWithToken();
      const [paid, shipped, pending1, pending2, cancelled] = [
        await placeOrder(user.id, token),
        await placeOrder(user.id, token),
        await placeOrder(user.id, token),
        await placeOrder(user.id, token),
        await placeOrder(user.id, token),
      ];
      // The API only creates pending orders; other states are set as the order's later life would.
      const repo = t.app.get(DataSource).getRepository(Order);
      const setStatus = (id: string, status: OrderStatus) => repo.update({ id }, { status });
      await setStatus(paid.id, 'paid');
      await setStatus(shipped.id, 'shipped');
      await setStatus(cancelled.id, 'cancelled');
      const expected: Record<OrderStatus, string[]> = {
        pending: [pending1.id, pending2.id],
        paid: [paid.id],
        shipped: [shipped.id],
        cancelled: [cancelled.id],
      };
      for (const [status, wanted] of Object.entries(expected)) {
        const res = await t
          .http()
          .get(`/users/${user.id}/orders?status=${status}`)
          .set(...auth(token));
        expect(res.status).toBe(200);
        expect(ids(res.body.data).sort()).toEqual([...wanted].sort());
        expect(res.body.data.every((o: OrderResponseDto) => o.status === status)).toBe(true);
        expect(res.body.page.total).toBe(wanted.length);
      }
    });

    it('pages with limit and offset, page.total counting every matching order', async () => {
      const { user, token } = await userWithToken();
      const placed: OrderResponseDto[] = [];
      for (let i = 0; i < 5; i++) placed.push(await placeOrder(user.id, token, { quantity: i + 1 }));
      const expected = sortedIds(placed, (o) => o.totalCents, 'asc');
      const seen: string[] = [];
      for (let offset = 0; offset < 5; offset += 2) {
        const res = await t
          .http()
          .get(`/users/${user.id}/orders?sort=totalCents&limit=2&offset=${offset}`)
          .set(...auth(token));
        expect(res.status).toBe(200);
        expect(res.body.page).toEqual({ limit: 2, offset, total: 5 });
        seen.push(...ids(res.body.data));
      }
      expect(seen).toEqual(expected);
    });

    it.each(['limit=0', 'limit=101', 'offset=-1', 'limit=abc'])('rejects %s with 400 naming the parameter', async (query) => {
      const { user, token } = await userWithToken();
      const res = await t
        .http()
        .get(`/users/${user.id}/orders?${query}`)
        .set(...auth(token));
      expectValidationProblem(res, `/users/${user.id}/orders`, [query.split('=')[0]]);
    });

    it('answers 403 insufficient_scope with scope="orders:read" to a token with only orders:write', async () => {
      const { user, token } = await userWithToken(['orders:write']);
      const res = await t
        .http()
        .get(`/users/${user.id}/orders`)
        .set(...auth(token));
      expectProblem(res, 403, `/users/${user.id}/orders`);
      expect(res.headers['www-authenticate']).toBe(bearerChallenge(t, 'error="insufficient_scope", scope="orders:read"'));
    });
  });

  describe('sorting orders', () => {
    let user: UserResponseDto;
    let token: string;
    let placed: OrderResponseDto[];

    beforeAll(async () => {
      ({ user, token } = await userWithToken());
      placed = [];
      // Distinct totals, two ties (500 = 1 × 500 = 5 × 100), and orders placed in the same millisecond.
      for (const [quantity, unitPriceCents] of [
        [1, 500],
        [2, 100],
        [5, 100],
        [1, 9_999],
        [3, 0],
        [1, 0],
        [4, 1_000],
      ]) {
        placed.push(await placeOrder(user.id, token, { quantity, unitPriceCents }));
      }
    });

    const keys: Record<string, (o: OrderResponseDto) => number> = {
      createdAt: (o) => Date.parse(o.createdAt),
      totalCents: (o) => o.totalCents,
    };

    for (const sort of Object.keys(keys)) {
      for (const order of ['asc', 'desc'] as const) {
        it(`sorts by ${sort} ${order}, ties broken by id ${order}`, async () => {
          const res = await t
            .http()
            .get(`/users/${user.id}/orders?sort=${sort}&order=${order}`)
            .set(...auth(token));
          expect(res.status).toBe(200);
          expect(ids(res.body.data)).toEqual(sortedIds(placed, keys[sort], order));
        });
      }
    }

    it('sorts ascending when order is not given', async () => {
      const res = await t
        .http()
        .get(`/users/${user.id}/orders?sort=totalCents`)
        .set(...auth(token));
      expect(ids(res.body.data)).toEqual(sortedIds(placed, keys.totalCents, 'asc'));
    });

    it('combines the status filter with a sort', async () => {
      await t.app.get(DataSource).getRepository(Order).update({ id: placed[3].id }, { status: 'paid' });
      const res = await t
        .http()
        .get(`/users/${user.id}/orders?status=pending&sort=totalCents&order=desc`)
        .set(...auth(token));
      expect(ids(res.body.data)).toEqual(
        sortedIds(
          placed.filter((_, i) => i !== 3),
          keys.totalCents,
          'desc',
        ),
      );
      expect(res.body.page.total).toBe(placed.length - 1);
    });

    it.each(['quantity', 'status', 'id', 'TOTALCENTS', 'total_cents'])('rejects sort=%s with 400', async (sort) => {
      const res = await t
        .http()
        .get(`/users/${user.id}/orders?sort=${sort}`)
        .set(...auth(token));
      expectValidationProblem(res, `/users/${user.id}/orders`, ['sort']);
    });
  });

  describe('GET /users/{userId}/orders/{orderId}', () => {
    it('returns an order of the caller', async () => {
      const { user, token } = await userWithToken(['orders:read', 'orders:write']);
      const order = await placeOrder(user.id, token);
      const res = await t
        .http()
        .get(`/users/${user.id}/orders/${order.id}`)
        .set(...auth(token));
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.body).toEqual(order);
    });

    it("lets an admin read another user's order", async () => {
      const { user, token } = await userWithToken();
      const order = await placeOrder(user.id, token);
      const res = await t
        .http()
        .get(`/users/${user.id}/orders/${order.id}`)
        .set(...auth(adminToken));
      expect(res.status).toBe(200);
      expect(res.body).toEqual(order);
    });

    it("answers 404 for another user's order under that user's path", async () => {
      const a = await userWithToken();
      const b = await userWithToken();
      const bOrder = await placeOrder(b.user.id, b.token);
      const path = `/users/${b.user.id}/orders/${bOrder.id}`;
      expectProblem(
        await t
          .http()
          .get(path)
          .set(...auth(a.token)),
        404,
        path,
      );
    });

    it("answers 404 for another user's order under the caller's own path", async () => {
      const a = await userWithToken();
      const b = await userWithToken();
      const bOrder = await placeOrder(b.user.id, b.token);
      const path = `/users/${a.user.id}/orders/${bOrder.id}`;
      expectProblem(
        await t
          .http()
          .get(path)
          .set(...auth(a.token)),
        404,
        path,
      );
    });

    it("answers 404 for user A's order fetched under user B's path, even to an admin", async () => {
      const a = await userWithToken();
      const b = await userWithToken();
      const aOrder = await placeOrder(a.user.id, a.token);
      const path = `/users/${b.user.id}/orders/${aOrder.id}`;
      expectProblem(
        await t
          .http()
          .get(path)
          .set(...auth(adminToken)),
        404,
        path,
      );
      expectProblem(
        await t
          .http()
          .get(path)
          .set(...auth(b.token)),
        404,
        path,
      );
    });

    it('answers 404 for an order id that does not exist, and for a user that does not exist', async () => {
      const { user, token } = await userWithToken();
      const noOrder = `/users/${user.id}/orders/${randomUUID()}`;
      expectProblem(
        await t
          .http()
          .get(noOrder)
          .set(...auth(token)),
        404,
        noOrder,
      );
      const noUser = `/users/${randomUUID()}/orders/${randomUUID()}`;
      expectProblem(
        await t
          .http()
          .get(noUser)
          .set(...auth(adminToken)),
        404,
        noUser,
      );
    });

    it('answers a probe with the same 404 whether the order exists under another owner or not at all', async () => {
      const a = await userWithToken();
      const b = await userWithToken();
      const bOrder = await placeOrder(b.user.id, b.token);
      const existing = await t
        .http()
        .get(`/users/${a.user.id}/orders/${bOrder.id}`)
        .set(...auth(a.token));
      const missing = await t
        .http()
        .get(`/users/${a.user.id}/orders/${randomUUID()}`)
        .set(...auth(a.token));
      expect(existing.status).toBe(404);
      expect({ ...existing.body, instance: undefined }).toEqual({ ...missing.body, instance: undefined });
    });

    it('answers 403 insufficient_scope with scope="orders:read" to a token with only orders:write', async () => {
      const { user, token } = await userWithToken(['orders:write']);
      const order = await placeOrder(user.id, token);
      const path = `/users/${user.id}/orders/${order.id}`;
      const res = await t
        .http()
        .get(path)
        .set(...auth(token));
      expectProblem(res, 403, path);
      expect(res.headers['www-authenticate']).toBe(bearerChallenge(t, 'error="insufficient_scope", scope="orders:read"'));
    });
  });
});
