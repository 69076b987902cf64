import { randomUUID } from 'node:crypto';
import type { Response } from 'supertest';
import { allScopes, scopeRole } from '../../src/auth/scopes';
import { type Route, key } from './route-discovery';
import type { TestApp } from './test-app';

// The cross-person probe of the route inventory: every route declaring `ownRecords: true` with an id in its path is
// called by a second person on a record of the first, which the first created through the API.

/** The path parameter that names a person: their own record is the person (made by `t.createUser`). */
const PERSON_PARAM = ':userId';
const PARAM = /:[A-Za-z]+/g;

type Schema = {
  $ref?: string;
  type?: string;
  format?: string;
  enum?: unknown[];
  example?: unknown;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  properties?: Record<string, Schema>;
  required?: string[];
};
interface OpenApiDocument {
  paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: Schema }> } }>>;
  components: { schemas: Record<string, Schema> };
}

/** One call and what it answered, as the inventory compares it. */
export interface Answer {
  status: number;
  contentType: unknown;
  body: unknown;
}
const answer = (res: Response): Answer => ({ status: res.status, contentType: res.headers['content-type'], body: res.body });

/** A person's token with every scope no role is bound to: only the records' owner tells the two people apart. */
function personToken(t: TestApp, id: string): Promise<string> {
  return t.token(
    id,
    allScopes().filter((s) => scopeRole(s) === undefined),
  );
}

export class OwnRecordsProbe {
  private readonly created = new Map<string, Promise<string>>();

  private constructor(
    private readonly t: TestApp,
    private readonly routes: Route[],
    private readonly document: OpenApiDocument,
    private readonly owner: { id: string; token: string },
    private readonly other: { id: string; token: string },
  ) {}

  /** Two people, and the owner's records for every route in `probed` (made before any is tried: no list is empty). */
  static async start(t: TestApp, routes: Route[], probed: Route[]): Promise<OwnRecordsProbe> {
    const document = (await t.http().get('/docs/openapi.json')).body as OpenApiDocument;
    const [owner, other] = [await t.createUser(), await t.createUser()];
    const probe = new OwnRecordsProbe(
      t,
      routes,
      document,
      { id: owner.id, token: await personToken(t, owner.id) },
      { id: other.id, token: await personToken(t, other.id) },
    );
    for (const route of probed) await probe.pathFor(route);
    return probe;
  }

  /**
   * The route called by the other person on the owner's record, what it answered, and what it must answer: exactly
   * the 404 it gives for records that do not exist at all (the same call with every id made up), and the owner
   * reading the record back unchanged.
   */
  async probe(route: Route): Promise<{ path: string; answered: Answer; expected: Answer; readBack: [Answer, Answer] }> {
    const path = await this.pathFor(route);
    const read = this.readBackRoute(route);
    const before = answer(await this.call('GET', path, this.owner.token));
    if (before.status !== 200) throw new Error(`${key(read)} answered the owner ${before.status} before ${key(route)} was tried`);
    const body = this.bodyFor(route);
    const answered = answer(await this.call(route.method, path, this.other.token, body));
    const missingPath = route.path.replace(PARAM, () => randomUUID());
    const missing = answer(await this.call(route.method, missingPath, this.other.token, body));
    const { type, detail } = (missing.body ?? {}) as { type?: unknown; detail?: unknown };
    if (missing.status !== 404 || typeof type !== 'string' || !/^urn:problem-type:[a-z-]+-not-found$/.test(type))
      throw new Error(
        `${key(route)} answered ${missing.status} ${JSON.stringify(missing.body)} for ${missingPath}, not its not-found problem`,
      );
    const expected = {
      status: 404,
      contentType: 'application/problem+json; charset=utf-8',
      body: { type, title: 'Not Found', status: 404, detail, instance: path },
    };
    const after = answer(await this.call('GET', path, this.owner.token));
    return { path, answered, expected, readBack: [before, after] };
  }

  /** The route's path with the owner's ids: the owner's own id for a person, else records the owner creates. */
  private async pathFor(route: Route): Promise<string> {
    const segments = route.path.split('/');
    const built: string[] = [];
    for (const [index, segment] of segments.entries()) {
      if (!segment.startsWith(':')) built.push(segment);
      else if (segment === PERSON_PARAM) built.push(this.owner.id);
      else built.push(await this.record(route, segments.slice(0, index).join('/'), built.join('/')));
    }
    return built.join('/');
  }

  /** The id of a record the owner creates through the collection's own POST, with a body its document declares valid. */
  private record(route: Route, collection: string, concrete: string): Promise<string> {
    const known = this.created.get(concrete);
    if (known) return known;
    const creating = (async () => {
      const create = this.routes.find((r) => r.method === 'POST' && r.path === collection && r.ownRecords);
      if (!create) throw new Error(`cannot create a record for ${key(route)}: no POST ${collection} declaring ownRecords`);
      const res = await this.call('POST', concrete, this.owner.token, this.bodyFor(create, route));
      const id = (res.body as { id?: unknown } | undefined)?.id;
      if (res.status !== 201 || typeof id !== 'string')
        throw new Error(`cannot create a record for ${key(route)}: POST ${concrete} answered ${res.status} ${JSON.stringify(res.body)}`);
      return id;
    })();
    this.created.set(concrete, creating);
    return creating;
  }

  /**
   * The GET of the same path, which shows the owner the record (or collection) the route acts on: one declaring
   * ownRecords, or a read open to every person (a record anyone reads and only its owner writes).
   */
  private readBackRoute(route: Route): Route {
    const read = this.routes.find((r) => r.method === 'GET' && r.path === route.path);
    if (!read) throw new Error(`cannot read back what ${key(route)} acts on: no GET ${route.path}`);
    return read;
  }

  /** A valid JSON body for a write, from the schema its OpenAPI document declares (its required fields). */
  private bodyFor(route: Route, probed: Route = route): Record<string, unknown> | undefined {
    if (!['POST', 'PUT', 'PATCH'].includes(route.method)) return undefined;
    const openApiPath = route.path.replace(/:([A-Za-z]+)/g, '{$1}');
    const content = this.document.paths[openApiPath]?.[route.method.toLowerCase()]?.requestBody?.content;
    const schema = content?.['application/json']?.schema;
    if (!schema) return undefined;
    const fail = (why: string) => new Error(`cannot build a body of ${key(route)} for ${key(probed)}: ${why}`);
    const resolved = this.resolve(schema);
    const body: Record<string, unknown> = {};
    for (const name of resolved.required ?? []) {
      const field = this.resolve(resolved.properties?.[name] ?? {});
      body[name] = valueOf(field, () => fail(`${name} ${JSON.stringify(field)}`));
    }
    return body;
  }

  private resolve(schema: Schema): Schema {
    if (!schema.$ref) return schema;
    return this.resolve(this.document.components.schemas[schema.$ref.replace('#/components/schemas/', '')] ?? {});
  }

  private call(method: string, path: string, token: string, body?: Record<string, unknown>) {
    const req = this.t.http()[method.toLowerCase() as 'get'](path).set('Authorization', `Bearer ${token}`);
    return body === undefined ? req : req.send(body);
  }
}

/** A value the schema accepts: its example, its first allowed value, or one made for its type and bounds. */
function valueOf(field: Schema, unsupported: () => Error): unknown {
  if (field.example !== undefined) return field.example;
  if (field.enum?.length) return field.enum[0];
  if (field.type === 'string' && field.pattern === undefined) {
    const made = `probe-${randomUUID()}`;
    if (field.format === 'uuid') return randomUUID();
    if (field.format === 'email') return `${made}@example.com`;
    if (field.format !== undefined) throw unsupported();
    const text = made.padEnd(field.minLength ?? 0, 'x');
    return field.maxLength === undefined ? text : text.slice(0, Math.max(field.maxLength, field.minLength ?? 1));
  }
  if (field.type === 'integer' || field.type === 'number') return field.minimum ?? 1;
  if (field.type === 'boolean') return false;
  throw unsupported();
}
