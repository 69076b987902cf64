import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import type { Response } from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TokenIssuer } from '../../src/oauth/grants/token-issuer.service';
import { handProof, p256, rsaJwk, thumbprint } from '../support/hostile-keys';
import { NO_RATE_LIMITS } from '../support/oauth';
import { ALL_SCOPES, type TestApp, createTestApp } from '../support/test-app';

/** The parts of the OpenAPI document the fuzzer reads. */
interface Schema {
  type?: string;
  format?: string;
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  properties?: Record<string, Schema>;
  required?: string[];
  $ref?: string;
}
interface Operation {
  parameters?: { name: string; in: 'path' | 'query'; schema?: Schema }[];
  requestBody?: { content: Record<string, { schema: Schema }> };
  responses: Record<string, { content?: Record<string, { schema?: Schema }> }>;
}
interface Document {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
}

/** A fixed seed: the same requests in every run, so a failure reproduces. */
const SEED = 20261124;
const RUNS = 4000;

/** A short text with a control character in it (NUL among them: what PostgreSQL cannot store). */
const withControl = fc
  .tuple(
    fc.string({ minLength: 1, maxLength: 8 }),
    fc.constantFrom('\u0000', '\u0007', '\n', '\t', '\u001b', '\u007f'),
    fc.string({ maxLength: 8 }),
  )
  .map(([a, control, b]) => `${a}${control}${b}`);

const hostileString = fc.oneof(
  fc.string({ maxLength: 24 }),
  withControl,
  fc.string({ unit: 'binary', maxLength: 24 }),
  fc.constantFrom(
    '',
    ' ',
    '\u0000',
    'a\u0000b',
    '%00',
    '\u202e\u0007\u001b[31m',
    '../../etc/passwd',
    "' OR 1=1 --",
    '<script>alert(1)</script>',
    '\ud83d',
    '😀'.repeat(60),
    'x'.repeat(3000),
    '-1',
    '1e309',
    '9007199254740993',
    'NaN',
    'null',
    '__proto__',
    'constructor',
  ),
);

const junk: fc.Arbitrary<unknown> = fc.oneof(
  hostileString,
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.oneof(fc.integer(), hostileString), { maxLength: 3 }),
  fc.dictionary(hostileString, fc.oneof(fc.integer(), hostileString), { maxKeys: 3 }),
);

/** A header's value as an HTTP client can send it: printable ASCII, at most 500 characters. */
const printable = (s: string) => s.replace(/[^\x20-\x7e]/g, '?').slice(0, 500);
const b64 = (value: unknown) => Buffer.from(JSON.stringify(value) ?? 'null').toString('base64url');

/** Keys a proof may carry: a real one, and the shapes of the slow-verification attacks (RFC 9449 11). */
const proofKey = p256();
const hostileJwk = fc.oneof(
  junk,
  fc.constantFrom<unknown>(proofKey.jwk, rsaJwk(2048), rsaJwk(4096, Buffer.alloc(512, 0xff)), rsaJwk(8192), {
    kty: 'EC',
    crv: 'P-256',
    x: 1,
  }),
);

/**
 * The DPoP header: mostly absent; else a signed proof with junk of every type in its claims and header, a
 * JWS-shaped string of junk, or junk.
 */
const dpopHeader: fc.Arbitrary<string | undefined> = fc.oneof(
  { weight: 5, arbitrary: fc.constant(undefined) },
  {
    weight: 3,
    arbitrary: fc
      .tuple(
        // Times are numbers more often than not, so that a proof gets past the type checks to the time checks.
        fc.dictionary(
          fc.constantFrom('htm', 'htu', 'iat', 'jti', 'ath', 'nonce', 'exp', 'nbf'),
          fc.oneof(junk, fc.integer(), fc.double()),
          {
            maxKeys: 3,
          },
        ),
        fc.oneof(
          { weight: 3, arbitrary: fc.constant({}) },
          fc.dictionary(fc.constantFrom('typ', 'alg', 'crit', 'kid'), junk, { maxKeys: 2 }),
        ),
        fc.option(hostileJwk, { nil: undefined, freq: 3 }),
        fc.option(hostileString.map(printable), { nil: undefined, freq: 3 }),
      )
      .map(([claims, header, jwk, signature]) => handProof(proofKey, claims, jwk === undefined ? header : { ...header, jwk }, signature)),
  },
  { weight: 1, arbitrary: fc.tuple(junk, junk, hostileString).map(([h, p, sig]) => `${b64(h)}.${b64(p)}.${printable(sig)}`) },
  { weight: 1, arbitrary: hostileString.map(printable) },
);

/** A value the schema allows. */
function validOf(schema: Schema | undefined): fc.Arbitrary<unknown> {
  if (schema?.enum?.length) return fc.constantFrom(...schema.enum);
  if (schema?.type === 'integer') return fc.integer({ min: schema.minimum ?? -1_000_000, max: schema.maximum ?? 1_000_000 });
  if (schema?.format === 'email') return fc.emailAddress().filter((e) => e.length <= (schema.maxLength ?? 254));
  if (schema?.format === 'uuid') return fc.uuid();
  if (schema?.type === 'string') {
    return fc.string({ minLength: Math.max(schema.minLength ?? 0, 1), maxLength: Math.min(schema.maxLength ?? 40, 60) });
  }
  if (schema?.type === 'boolean') return fc.boolean();
  return junk;
}

/** A value the schema allows (mostly), or anything at all. */
function valueOf(schema: Schema | undefined): fc.Arbitrary<unknown> {
  return fc.oneof({ weight: 4, arbitrary: validOf(schema) }, { weight: 1, arbitrary: junk });
}

/**
 * An object one change away from valid: every property of the schema with a valid value (optional ones mostly),
 * then, mostly, one change - a field hostile, a field left out, or a field the schema does not have. One change
 * at a time is what reaches past validation into the service and the database.
 */
function objectOf(schema: Schema): fc.Arbitrary<Record<string, unknown>> {
  const names = Object.keys(schema.properties ?? {});
  const required = new Set(schema.required ?? []);
  const fields = Object.fromEntries(
    names.map((name) => [
      name,
      required.has(name) ? validOf(schema.properties![name]) : fc.option(validOf(schema.properties![name]), { freq: 4, nil: undefined }),
    ]),
  );
  const change = fc.oneof(
    { weight: 1, arbitrary: fc.constant({ kind: 'none' as const }) },
    { weight: 4, arbitrary: fc.record({ kind: fc.constant('hostile' as const), at: fc.nat(), value: junk }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('drop' as const), at: fc.nat() }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('extra' as const), name: hostileString, value: junk }) },
  );
  return fc.tuple(fc.record(fields), change).map(([record, c]) => {
    const out: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(record)) if (value !== undefined) out[name] = value;
    if (c.kind === 'hostile' && names.length) out[names[c.at % names.length]] = c.value;
    if (c.kind === 'drop' && names.length) delete out[names[c.at % names.length]];
    if (c.kind === 'extra') out[c.name] = c.value;
    return out;
  });
}

interface FuzzRequest {
  method: string;
  path: string;
  url: string;
  auth: string | undefined;
  dpop?: string;
  body?: { type: string; text: string };
}

describe('OpenAPI-driven fuzzing (fixed seed): no 5xx, and every answer as documented', () => {
  let t: TestApp;
  let doc: Document;
  const schemas = (s: Schema): Schema => (s.$ref ? doc.components.schemas[s.$ref.split('/').pop()!] : s);

  beforeAll(async () => {
    t = await createTestApp(NO_RATE_LIMITS);
    doc = (await t.http().get('/docs/openapi.json')).body as Document;
  });
  afterAll(() => t.close());

  it(`${RUNS} generated requests over every documented operation`, async () => {
    const admin = await t.createUser({ role: 'admin' });
    const user = await t.createUser();
    const targets = await Promise.all([1, 2, 3].map(() => t.createUser()));
    const adminToken = await t.token(admin.id, ALL_SCOPES);
    const userToken = await t.token(user.id, ALL_SCOPES);
    const ids = [user.id, ...targets.map((u) => u.id)];
    // A token bound to the fuzzer's proof key (RFC 9449 6), so that its proofs reach every check of the API.
    const jkt = thumbprint(proofKey.jwk);
    const scope = ALL_SCOPES.join(' ');
    const boundToken = t.app.get(TokenIssuer).mintAccessToken({ sub: admin.id, clientId: 'fuzz', scope, grantId: randomUUID(), jkt }).token;

    const auth = fc.oneof(
      { weight: 6, arbitrary: fc.constant(`Bearer ${adminToken}`) },
      { weight: 2, arbitrary: fc.constant(`Bearer ${userToken}`) },
      { weight: 1, arbitrary: fc.constant(undefined) },
      // What an HTTP client can send in a header at all.
      { weight: 1, arbitrary: hostileString.map((s) => `Bearer ${printable(s)}`) },
      // The DPoP scheme with an unbound token or junk, and other schemes with junk.
      { weight: 1, arbitrary: fc.constant(`DPoP ${userToken}`) },
      { weight: 2, arbitrary: fc.constant(`DPoP ${boundToken}`) },
      {
        weight: 1,
        arbitrary: fc
          .tuple(fc.constantFrom('DPoP', 'dpop', 'Basic', 'Bearer  ', ''), hostileString)
          .map(([scheme, s]) => `${scheme} ${printable(s)}`),
      },
    );

    const operations: fc.Arbitrary<FuzzRequest>[] = [];
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        const pathParams = (op.parameters ?? []).filter((p) => p.in === 'path');
        const queryParams = (op.parameters ?? []).filter((p) => p.in === 'query');
        const pathArb = fc.tuple(
          ...pathParams.map(() =>
            fc.oneof(
              { weight: 4, arbitrary: fc.constantFrom(...ids) },
              { weight: 1, arbitrary: fc.uuid() },
              // Not a segment that would take the request to another route ('', '.', '..').
              { weight: 1, arbitrary: hostileString.filter((s) => !['', '.', '..'].includes(s)) },
            ),
          ),
        );
        const queryArb = fc.tuple(
          fc.record(Object.fromEntries(queryParams.map((p) => [p.name, valueOf(p.schema)])), { requiredKeys: [] }),
          // Now and then a parameter the operation does not take.
          fc.oneof({ weight: 7, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.tuple(hostileString, hostileString) }),
          // Now and then a parameter given twice (`?q=a&q=a`), which Express hands over as an array.
          fc.oneof({ weight: 6, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
        );
        const content = op.requestBody?.content ?? {};
        const [bodyType] = Object.keys(content);
        const bodyArb: fc.Arbitrary<FuzzRequest['body']> = bodyType
          ? fc.oneof(
              { weight: 8, arbitrary: objectOf(schemas(content[bodyType].schema)).map((o) => encode(bodyType, o)) },
              { weight: 1, arbitrary: junk.map((j) => ({ type: 'application/json', text: JSON.stringify(j) ?? 'null' })) },
              { weight: 1, arbitrary: hostileString.map((s) => ({ type: bodyType, text: s })) },
            )
          : fc.constant(undefined);
        operations.push(
          fc
            .record({ segments: pathArb, query: queryArb, auth, dpop: dpopHeader, body: bodyArb })
            .map(({ segments, query, auth: a, dpop, body }) => {
              let i = 0;
              const filled = path.replace(/\{[^}]+\}/g, () => encodeURIComponent(wellFormed(String(segments[i++]))));
              const search = new URLSearchParams();
              for (const [name, value] of Object.entries(query[0])) if (value !== undefined) search.append(name, stringOf(value));
              if (query[1]) search.append(query[1][0], query[1][1]);
              const [first] = [...search.keys()];
              if (query[2] && first !== undefined) search.append(first, search.get(first)!);
              const qs = search.toString();
              return { method, path, url: qs ? `${filled}?${qs}` : filled, auth: a, dpop, body };
            }),
        );
      }
    }

    // Every kind of failure once (operation, status, what is wrong), with the first request that showed it.
    const failures = new Map<string, string>();
    await fc.assert(
      fc.asyncProperty(fc.oneof(...operations), async (r) => {
        const res = await send(r);
        const problem = check(r, res);
        if (problem) {
          const key = `${r.method.toUpperCase()} ${r.path} ${res.status} ${problem.kind}`;
          if (!failures.has(key)) failures.set(key, problem.detail);
        }
      }),
      { seed: SEED, numRuns: RUNS },
    );
    expect([...failures].map(([key, example]) => `${key}\n    e.g. ${example}`)).toEqual([]);
  }, 120_000);

  function send(r: FuzzRequest): Promise<Response> {
    let req = (t.http() as unknown as Record<string, (url: string) => ReturnType<ReturnType<TestApp['http']>['get']>>)[r.method](r.url);
    if (r.auth !== undefined) req = req.set('Authorization', r.auth);
    if (r.dpop !== undefined) req = req.set('DPoP', r.dpop);
    if (r.body) req = req.set('Content-Type', r.body.type).send(r.body.text);
    return req.redirects(0).then(
      (res) => res,
      (error: { response?: Response }) => {
        if (error.response) return error.response;
        throw error;
      },
    );
  }

  /** What is wrong with an answer, if anything: its kind, and the request and answer to show. */
  function check(r: FuzzRequest, res: Response): { kind: string; detail: string } | undefined {
    const detail = `${r.url.slice(0, 200)} ${r.body ? `(${r.body.type}: ${r.body.text.slice(0, 120)})` : ''} -> ${JSON.stringify(res.body ?? res.text).slice(0, 200)}`;
    if (res.status >= 500) return { kind: 'a 5xx', detail };
    const documented = doc.paths[r.path][r.method].responses[String(res.status)];
    if (!documented) return { kind: 'status not documented', detail };
    const types = Object.keys(documented.content ?? {});
    const type = String(res.headers['content-type'] ?? '').split(';')[0];
    if (types.length && !types.includes(type)) return { kind: `content-type ${type}, documented ${types.join(', ')}`, detail };
    const schema = documented.content?.[type]?.schema;
    if (schema && type.endsWith('json')) {
      const missing = (schemas(schema).required ?? []).filter((name) => !(name in (res.body ?? {})));
      if (missing.length) return { kind: `body lacks ${missing.join(', ')}`, detail };
    }
    return undefined;
  }
});

/** A URL can carry only well-formed UTF-16 (a lone surrogate becomes U+FFFD, as a browser would send it). */
function wellFormed(value: string): string {
  return value.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');
}

function stringOf(value: unknown): string {
  return typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
}

function encode(type: string, value: Record<string, unknown>): { type: string; text: string } {
  if (type === 'application/x-www-form-urlencoded') {
    const form = new URLSearchParams();
    for (const [name, v] of Object.entries(value)) if (v !== undefined) form.append(name, stringOf(v));
    return { type, text: form.toString() };
  }
  return { type, text: JSON.stringify(value) };
}
