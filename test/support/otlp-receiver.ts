import { type Server, createServer } from 'node:http';

/** An OTLP attribute value as OTLP/HTTP JSON encodes it. */
interface AnyValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
}
interface KeyValue {
  key: string;
  value: AnyValue;
}
interface ExportRequest {
  resourceSpans: {
    resource: { attributes: KeyValue[] };
    scopeSpans: {
      scope: { name: string };
      spans: { traceId: string; spanId: string; parentSpanId?: string; name: string; kind: number; attributes?: KeyValue[] }[];
    }[];
  }[];
}

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client. */
  kind: number;
  scope: string;
  attributes: Record<string, string | number | boolean | undefined>;
  resource: Record<string, string | number | boolean | undefined>;
}

const valueOf = (v: AnyValue) =>
  v.stringValue ?? (v.intValue === undefined ? undefined : Number(v.intValue)) ?? v.boolValue ?? v.doubleValue;
const attributesOf = (list: KeyValue[] = []) => Object.fromEntries(list.map((a) => [a.key, valueOf(a.value)]));

/**
 * An OTLP/HTTP (JSON) trace receiver on 127.0.0.1 that keeps every span in memory, as a collector would receive
 * them: the service under test exports to it through the standard OTEL_EXPORTER_OTLP_* variables.
 */
export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  private server: Server | undefined;

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        if (req.method !== 'POST' || req.url !== '/v1/traces' || !/^application\/json/.test(req.headers['content-type'] ?? '')) {
          res.writeHead(415).end();
          return;
        }
        const body = JSON.parse(Buffer.concat(chunks).toString()) as ExportRequest;
        for (const { resource, scopeSpans } of body.resourceSpans) {
          for (const { scope, spans } of scopeSpans) {
            for (const span of spans) {
              this.spans.push({
                traceId: span.traceId,
                spanId: span.spanId,
                parentSpanId: span.parentSpanId || undefined,
                name: span.name,
                kind: span.kind,
                scope: scope.name,
                attributes: attributesOf(span.attributes),
                resource: attributesOf(resource.attributes),
              });
            }
          }
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    const { port } = this.server.address() as { port: number };
    return `http://127.0.0.1:${port}`;
  }

  /** Waits until a span matching `predicate` has arrived (the SDK exports in batches), and returns it. */
  async waitFor(predicate: (span: ReceivedSpan) => boolean, ms = 20_000): Promise<ReceivedSpan> {
    const deadline = Date.now() + ms;
    for (;;) {
      const found = this.spans.find(predicate);
      if (found) return found;
      if (Date.now() > deadline) throw new Error(`no such span among ${this.spans.map((s) => s.name).join(', ')}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** The spans under `root` in its trace (children, their children, ...). */
  descendantsOf(root: ReceivedSpan): ReceivedSpan[] {
    const found: ReceivedSpan[] = [];
    const parents = new Set([root.spanId]);
    for (let grew = true; grew;) {
      grew = false;
      for (const span of this.spans) {
        if (span.traceId === root.traceId && span.parentSpanId && parents.has(span.parentSpanId) && !parents.has(span.spanId)) {
          parents.add(span.spanId);
          found.push(span);
          grew = true;
        }
      }
    }
    return found;
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
