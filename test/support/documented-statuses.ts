import type { NestExpressApplication } from '@nestjs/platform-express';
import type { NextFunction, Request, Response } from 'express';

interface Answered {
  method: string;
  path: string;
  status: number;
}

/**
 * Records the status of every answer a test app gives on one of its routes, and checks at the end that the
 * OpenAPI document lists each for that operation: every status the e2e suites produce is documented. Requests no
 * route took (404, 405) and the documentation's own routes are left out.
 */
export class DocumentedStatuses {
  private readonly answered = new Map<string, Answered>();

  install(app: NestExpressApplication): void {
    app.use((req: Request, res: Response, next: NextFunction) => {
      res.once('finish', () => {
        const route = (req as Request & { route?: { path?: unknown } }).route;
        if (typeof route?.path !== 'string' || route.path.startsWith('/docs')) return;
        const method = req.method === 'HEAD' ? 'get' : req.method.toLowerCase();
        const path = route.path.replace(/[:*]([A-Za-z0-9_]+)/g, '{$1}');
        const answer = { method, path, status: res.statusCode };
        this.answered.set(`${method} ${path} ${res.statusCode}`, answer);
      });
      next();
    });
  }

  /** The answers whose status the document does not list for their operation. */
  undocumented(document: { paths: Record<string, Record<string, { responses?: Record<string, unknown> }>> }): string[] {
    const out: string[] = [];
    for (const { method, path, status } of this.answered.values()) {
      const responses = document.paths[path]?.[method]?.responses;
      if (!responses || !(String(status) in responses || 'default' in responses)) out.push(`${method.toUpperCase()} ${path} ${status}`);
    }
    return out.sort();
  }
}
