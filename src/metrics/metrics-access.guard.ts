import { type CanActivate, type ExecutionContext, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { AppConfig } from '../config/app-config';
import { clientAddress } from '../common/client-address';
import { DomainError } from '../common/domain-error';
import { MetricsConfig } from './metrics.config';
import { MetricsError } from './metrics.errors';

const BEARER = /^bearer[ \t]+(\S+)[ \t]*$/i;

/**
 * Who may read `/metrics` (the bearer guard does not apply; the route is public to it): a request that sends an
 * `Authorization` header is judged by it alone (`Bearer <METRICS_TOKEN>`, else 403); one that sends none, by its
 * address against `METRICS_ALLOW`.
 *
 * The address is the peer of the connection; with `TRUST_PROXY=true`, the one the nearest proxy saw (the last
 * `X-Forwarded-For` entry, which a client cannot forge, unlike the first one Express takes for `req.ip`). A request
 * that a proxy forwarded while `TRUST_PROXY` is off comes from an address nobody knows, so it needs the token.
 */
@Injectable()
export class MetricsAccessGuard implements CanActivate {
  constructor(
    private readonly metrics: MetricsConfig,
    private readonly app: AppConfig,
  ) {}

  canActivate(context: ExecutionContext): boolean {
    if (!this.metrics.enabled) throw new DomainError(MetricsError.Off, 'Metrics are turned off.');
    const req = context.switchToHttp().getRequest<Request>();
    const authorization = req.headers.authorization;
    const admitted =
      authorization === undefined
        ? this.metrics.allow.admits(this.clientAddress(req))
        : this.metrics.acceptsToken(BEARER.exec(authorization)?.[1] ?? '');
    if (!admitted) {
      throw new DomainError(MetricsError.Forbidden, 'Metrics are served only to the configured networks, or with the metrics token.');
    }
    return true;
  }

  private clientAddress(req: Request): string | undefined {
    if (this.app.trustProxy) return clientAddress(req);
    const forwarded = req.headers['x-forwarded-for'] !== undefined || req.headers.forwarded !== undefined;
    return forwarded ? undefined : clientAddress(req);
  }
}
