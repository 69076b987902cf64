import type { ClientRequest, IncomingMessage } from 'node:http';
import { type Span, trace } from '@opentelemetry/api';
import type { NodeSDK } from '@opentelemetry/sdk-node';

/** The service's name in traces unless OTEL_SERVICE_NAME (or service.name in OTEL_RESOURCE_ATTRIBUTES) names it. */
export const SERVICE_NAME = 'oauth-resource-service';

/** Requests that say nothing about the service's work (probes and scrapes): no trace is started for them. */
const UNTRACED_PATHS = new Set(['/health/live', '/health/ready', '/metrics']);

let sdk: NodeSDK | undefined;

/**
 * Whether the standard OpenTelemetry variables ask for traces: an OTLP endpoint is set, the SDK is not disabled
 * (OTEL_SDK_DISABLED) and the trace exporter is not turned off (OTEL_TRACES_EXPORTER=none).
 */
export function tracingRequested(env: NodeJS.ProcessEnv): boolean {
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT;
  return Boolean(endpoint) && env.OTEL_SDK_DISABLED?.trim().toLowerCase() !== 'true' && env.OTEL_TRACES_EXPORTER?.trim() !== 'none';
}

/** True once {@link startTracing} has started the SDK: the log lines then carry trace ids and handlers get spans. */
export function tracingEnabled(): boolean {
  return sdk !== undefined;
}

/**
 * Starts the OpenTelemetry SDK with OTLP trace export when {@link tracingRequested}: spans for HTTP requests
 * (named by their Express route), Nest handlers (see `HandlerSpanInterceptor`) and PostgreSQL statements, exported as
 * the OTEL_* variables say (protocol, headers, sampler, resource). It must run before `http`, `express` and `pg` are
 * first loaded, which the instrumentations hook. With tracing off nothing of the SDK is loaded.
 */
export function startTracing(env: NodeJS.ProcessEnv = process.env): void {
  if (sdk || !tracingRequested(env)) return;
  /* eslint-disable @typescript-eslint/no-require-imports -- loaded only when tracing is on, and synchronously: the
     instrumentations must be in place before the application's imports load the modules they hook. */
  const { NodeSDK } = require('@opentelemetry/sdk-node') as typeof import('@opentelemetry/sdk-node');
  const { HttpInstrumentation } = require('@opentelemetry/instrumentation-http') as typeof import('@opentelemetry/instrumentation-http');
  const { PgInstrumentation } = require('@opentelemetry/instrumentation-pg') as typeof import('@opentelemetry/instrumentation-pg');
  /* eslint-enable @typescript-eslint/no-require-imports */
  const named = Boolean(env.OTEL_SERVICE_NAME) || /(^|,)\s*service\.name\s*=/.test(env.OTEL_RESOURCE_ATTRIBUTES ?? '');
  sdk = new NodeSDK({
    // NodeSDK's serviceName wins over the variables, so it is given only when they name none.
    serviceName: named ? undefined : SERVICE_NAME,
    instrumentations: [
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (req) => UNTRACED_PATHS.has((req.url ?? '').split('?')[0]),
        applyCustomAttributesOnSpan: (span, request) => {
          nameByRoute(span, request);
          redactQuery(span, request);
        },
      }),
      // Statements of background jobs (revocation sync, retention) would each be a trace of their own: only those
      // made for a request are traced. Parameters are never recorded (enhancedDatabaseReporting is off).
      new PgInstrumentation({ requireParentSpan: true }),
    ],
    // Traces only: metrics are Prometheus' (GET /metrics) and logs go to stdout.
    metricReaders: [],
    logRecordProcessors: [],
  });
  sdk.start();
}

/**
 * Names a server span by the route Express matched (`POST /token`, `GET /users/:id`), as OpenTelemetry's Express
 * instrumentation would, and sets `http.route`: Express sets `req.route` on the request the span was made for.
 * (That instrumentation is not used: it wraps every middleware layer, and would not see Nest's ESM import of Express.)
 */
function nameByRoute(span: Span, request: IncomingMessage | ClientRequest): void {
  const route = (request as { route?: { path?: unknown } }).route?.path;
  if (typeof route !== 'string') return;
  span.setAttribute('http.route', route);
  span.updateName(`${(request as IncomingMessage).method} ${route}`);
}

/**
 * A query string carries secrets (a reset link's token, an authorization code at a callback): a span keeps only
 * its parameters' names (`token=[redacted]`), as the access log keeps none of it.
 */
function redactQuery(span: Span, request: IncomingMessage | ClientRequest): void {
  const url = (request as IncomingMessage).url ?? '';
  const start = url.indexOf('?');
  if (start < 0) return;
  const names = [...new URLSearchParams(url.slice(start + 1)).keys()];
  span.setAttribute('url.query', names.map((name) => `${encodeURIComponent(name)}=[redacted]`).join('&'));
}

/** Sends the spans still buffered and stops the SDK (at shutdown); nothing when tracing is off. */
export async function stopTracing(): Promise<void> {
  const running = sdk;
  sdk = undefined;
  await running?.shutdown();
}

/** The active span's ids for a log line, with the field names OpenTelemetry's log correlation uses. */
export function traceLogFields(): Record<string, string> {
  const span = trace.getActiveSpan();
  if (!span) return {};
  const { traceId, spanId, traceFlags } = span.spanContext();
  return { trace_id: traceId, span_id: spanId, trace_flags: `0${traceFlags.toString(16)}` };
}
