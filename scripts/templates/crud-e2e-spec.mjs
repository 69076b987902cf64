// The e2e suite of a generated CRUD module (crud-module.mjs names the placeholders of `n`).
import { ownedRecordsSpec } from './crud-e2e-owned.mjs';

export const e2eSpec = (n) => `import { randomUUID } from 'node:crypto';${n.owned ? "\nimport { DataSource } from 'typeorm';" : ''}
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
${n.owned ? ownedRecordsSpec(n) : ''}});
`;
