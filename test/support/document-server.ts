import { randomUUID } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type Server, createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generate } from 'selfsigned';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** A local https server (certificate from a CA made for the run) that counts the requests for each path. */
export class DocumentServer {
  readonly hits = new Map<string, number>();
  private readonly routes = new Map<string, Handler>();
  private server: Server | undefined;
  port = 0;

  async start(key: string, cert: string): Promise<void> {
    this.server = createServer({ key, cert }, (req, res) => {
      const path = req.url ?? '';
      this.hits.set(path, (this.hits.get(path) ?? 0) + 1);
      const handler = this.routes.get(path);
      if (handler) handler(req, res);
      else res.writeHead(404).end();
    });
    const server = this.server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.port = (server.address() as AddressInfo).port;
  }

  stop(): Promise<void> {
    const server = this.server;
    if (!server) return Promise.resolve();
    server.closeAllConnections();
    return new Promise((resolve) => server.close(() => resolve()));
  }

  /** A new path answered by `handler`; its client ID URL on `host`. */
  route(handler: Handler, host = 'localhost'): { url: string; path: string } {
    const path = `/clients/${randomUUID()}.json`;
    this.routes.set(path, handler);
    return { url: `https://${host}:${this.port}${path}`, path };
  }

  /** A path serving a JSON document built from its own URL. */
  document(build: (url: string) => unknown, headers: Record<string, string> = {}, host = 'localhost'): { url: string; path: string } {
    let url = '';
    const route = this.route((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json', ...headers }).end(JSON.stringify(build(url)));
    }, host);
    url = route.url;
    return route;
  }

  count(path: string): number {
    return this.hits.get(path) ?? 0;
  }
}

/** A CA made for the run and a certificate it signed for localhost, 127.0.0.1 and ::1 (the document server's). */
export async function certificates(): Promise<{ ca: string; key: string; cert: string }> {
  const ca = await generate([{ name: 'commonName', value: 'Client metadata test CA' }], {
    keyType: 'ec',
    algorithm: 'sha256',
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    ],
  });
  const server = await generate([{ name: 'commonName', value: 'localhost' }], {
    keyType: 'ec',
    algorithm: 'sha256',
    ca: { key: ca.private, cert: ca.cert },
    extensions: [
      {
        name: 'subjectAltName',
        altNames: [
          { type: 2, value: 'localhost' },
          { type: 7, ip: '127.0.0.1' },
          { type: 7, ip: '::1' },
        ],
      },
      { name: 'extKeyUsage', serverAuth: true },
    ],
  });
  return { ca: ca.cert, key: server.private, cert: server.cert };
}

/**
 * A started {@link DocumentServer} and its CA written to a file, for the app's `CIMD_CA_FILE`; `close()` stops
 * the server and removes the file.
 */
export async function startDocumentServer(): Promise<{ server: DocumentServer; caFile: string; close(): Promise<void> }> {
  const { ca, key, cert } = await certificates();
  const caFile = join(tmpdir(), `cimd-ca-${randomUUID()}.pem`);
  writeFileSync(caFile, ca);
  const server = new DocumentServer();
  await server.start(key, cert);
  return {
    server,
    caFile,
    async close() {
      await server.stop();
      rmSync(caFile, { force: true });
    },
  };
}
