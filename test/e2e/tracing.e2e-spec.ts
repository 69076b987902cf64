import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codeFlow, demoFrom } from '../support/live-service';
import { OtlpReceiver } from '../support/otlp-receiver';
import { type RunningService, buildOnce, startService } from '../support/service-process';
import { type TestDatabase, createTestDatabase } from '../support/test-app';

/** OTLP's SpanKind values. */
const SERVER = 2;
const CLIENT = 3;

/**
 * Traces: the built service with OTEL_EXPORTER_OTLP_ENDPOINT set exports a code flow's spans (HTTP, named by route;
 * Nest handler; on PostgreSQL, every statement) to an OTLP receiver, continues a caller's W3C trace, and writes
 * the trace id into each request's log lines.
 */
describe('tracing (OpenTelemetry, OTLP)', () => {
  const receiver = new OtlpReceiver();
  let db: TestDatabase;
  let svc: RunningService;
  let flow: Awaited<ReturnType<typeof codeFlow>>;
  const resetSecret = randomBytes(32).toString('base64url');
  const caller = { traceId: randomBytes(16).toString('hex'), spanId: randomBytes(8).toString('hex') };

  beforeAll(async () => {
    buildOnce();
    db = await createTestDatabase();
    const endpoint = await receiver.start();
    svc = await startService({
      DATABASE_URL: db.url,
      LOG_LEVEL: 'info',
      OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '100',
    });
    flow = await codeFlow(svc.baseUrl, demoFrom(svc.output()));
    const traced = await fetch(`${svc.baseUrl}/api/resource`, {
      headers: { authorization: `Bearer ${flow.accessToken}`, traceparent: `00-${caller.traceId}-${caller.spanId}-01` },
    });
    expect(traced.status).toBe(200);
    expect((await fetch(`${svc.baseUrl}/health/ready`)).status).toBe(200);
    expect((await fetch(`${svc.baseUrl}/reset-password?token=${resetSecret}`)).status).toBe(400);
  }, 120_000);

  afterAll(async () => {
    if (svc && svc.child.exitCode === null) {
      svc.child.kill('SIGTERM');
      await svc.exit;
    }
    await receiver.stop();
    await db?.drop();
  });

  it("exports each request as a server span named by its route, with the Nest handler's span beneath", async () => {
    const token = await receiver.waitFor((s) => s.kind === SERVER && s.name === 'POST /token');
    expect(token.scope).toBe('@opentelemetry/instrumentation-http');
    expect(token.attributes).toMatchObject({ 'http.request.method': 'POST', 'http.route': '/token', 'http.response.status_code': 200 });
    expect(token.resource['service.name']).toBe('oauth-resource-service');
    await receiver.waitFor((s) => s.traceId === token.traceId && s.name === 'TokenController.token');
    const below = receiver.descendantsOf(token);
    expect(below.find((s) => s.name === 'TokenController.token')?.attributes).toMatchObject({
      'nestjs.type': 'handler',
      'nestjs.controller': 'TokenController',
      'nestjs.callback': 'token',
    });
  });

  it('has a client span for each PostgreSQL statement a request makes, under its request (none on SQLite, whose driver has no instrumentation)', async () => {
    const token = await receiver.waitFor(
      (s) => s.kind === SERVER && s.name === 'POST /token' && s.attributes['http.response.status_code'] === 200,
    );
    await receiver.waitFor((s) => s.traceId === token.traceId && s.name === 'TokenController.token');
    const statements = receiver.descendantsOf(token).filter((s) => s.kind === CLIENT);
    if (db.url.startsWith('postgres')) {
      expect(statements.length).toBeGreaterThan(0);
      for (const statement of statements) {
        expect(statement.scope).toBe('@opentelemetry/instrumentation-pg');
        expect(statement.attributes['db.system.name']).toBe('postgresql');
      }
      expect(statements.some((s) => typeof s.attributes['db.query.text'] === 'string')).toBe(true);
    } else {
      expect(statements).toEqual([]);
    }
  });

  it("continues the caller's trace from its traceparent header, and leaves health probes untraced", async () => {
    const api = await receiver.waitFor((s) => s.kind === SERVER && s.traceId === caller.traceId);
    expect(api).toMatchObject({ name: 'GET /api/resource', parentSpanId: caller.spanId });
    expect(api.attributes['http.route']).toBe('/api/resource');
    expect(receiver.spans.filter((s) => String(s.attributes['url.path']).startsWith('/health'))).toEqual([]);
  });

  it("writes the request's trace id and span id into its log lines", async () => {
    const api = await receiver.waitFor((s) => s.kind === SERVER && s.traceId === caller.traceId);
    // Log lines go out in batches, at least every 250 ms.
    for (let i = 0; i < 100 && !svc.output().includes(caller.traceId); i++) await new Promise((r) => setTimeout(r, 50));
    const lines = svc
      .output()
      .split('\n')
      .filter((l) => l.includes('"request completed"'))
      .map((l) => JSON.parse(l) as { trace_id?: string; span_id?: string; trace_flags?: string; req: { path: string } });
    const traced = lines.filter((l) => l.trace_id === caller.traceId);
    expect(traced).toHaveLength(1);
    expect(traced[0]).toMatchObject({ req: { path: '/api/resource' }, span_id: api.spanId, trace_flags: '01' });
    // Every request's line carries the id of a trace that was exported.
    for (const line of lines.filter((l) => l.req.path !== '/health/ready')) {
      expect(receiver.spans.some((s) => s.kind === SERVER && s.traceId === line.trace_id)).toBe(true);
    }
  });

  it('puts no secret of the flow (password, client secret, code, verifier, tokens, session) into any span', async () => {
    await receiver.waitFor((s) => s.kind === SERVER && s.traceId === caller.traceId);
    const exported = JSON.stringify(receiver.spans);
    for (const secret of flow.secrets) expect(exported).not.toContain(secret);
  });

  it("keeps a query string's parameter names only: no secret in a span", async () => {
    const reset = await receiver.waitFor((s) => s.kind === SERVER && s.name === 'GET /reset-password');
    expect(reset.attributes['url.query']).toBe('token=[redacted]');
    expect(JSON.stringify(receiver.spans)).not.toContain(resetSecret);
  });
});
