import { Injectable } from '@nestjs/common';
import { OnEvent } from '@nestjs/event-emitter';
import type { Pool } from 'pg';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { DataSource } from 'typeorm';
import { handlesOf } from '../database/connections';
import { RATE_LIMIT_REFUSED } from '../rate-limit/rate-limit';
import { RATE_LIMIT_BUCKETS, type RateLimitBucket } from '../rate-limit/rate-limit.config';
import type { RequestObserver } from '../logging/access-log.middleware';
import { MetricsConfig } from './metrics.config';

/** The `route` of a request no route took (a 404, a 405, the documentation's static files). */
export const UNMATCHED_ROUTE = 'unmatched';
/** The labels of one request series. */
type RequestLabels = Readonly<Record<'method' | 'route' | 'status', string>>;

/** One series of the request metrics: its histogram child, made once, and its count. */
interface RequestSeries {
  readonly labels: RequestLabels;
  readonly durations: { observe(seconds: number): void };
  count: number;
}

/** Methods kept as they are in the `method` label; any other is `OTHER`, so clients cannot add label values. */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/**
 * The service's Prometheus metrics, in a registry of its own (never prom-client's global one, so that several
 * applications in one process keep apart): requests by route template, issued tokens, refresh-token reuse, failed
 * logins, rate-limit refusals, the PostgreSQL pool and the default process metrics. Other modules report through
 * its methods; `GET /metrics` reads {@link scrape}. With `METRICS=off` the counters still count (a few additions)
 * but nothing is exposed, and neither requests nor the process are measured.
 */
@Injectable()
export class MetricsService {
  private readonly registry = new Registry();
  /** The request series by route, method and status, so that a request finds its own without allocating. */
  private readonly requestSeries = new Map<string, Map<string, Map<number, RequestSeries>>>();
  private readonly allRequestSeries: RequestSeries[] = [];
  // Counted in the series (one addition per request) and copied in at each scrape, because prom-client's own
  // inc() builds and checks a label key on every call: a third of what measuring a request cost.
  private readonly requests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests answered, by method, route template and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
    collect: () => {
      this.requests.reset();
      for (const series of this.allRequestSeries) this.requests.inc(series.labels, series.count);
    },
  });
  private readonly durations = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time from the request reaching the service to the last byte of its answer, by method, route template and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });
  private readonly tokensIssued = new Counter({
    name: 'oauth_tokens_issued_total',
    help: 'Successful token responses of POST /token, by grant type',
    labelNames: ['grant_type'] as const,
    registers: [this.registry],
  });
  private readonly refreshReuse = new Counter({
    name: 'oauth_refresh_token_reuse_total',
    help: 'Rotated refresh tokens presented again (outside a rotation grace): each revoked its grant',
    registers: [this.registry],
  });
  private readonly loginFailures = new Counter({
    name: 'login_failures_total',
    help: 'POST /login answered 401 (wrong or missing email or password)',
    registers: [this.registry],
  });
  private readonly rateLimitRefusals = new Counter({
    name: 'rate_limit_refusals_total',
    help: 'Requests refused with 429, by rate-limit bucket',
    labelNames: ['bucket'] as const,
    registers: [this.registry],
  });

  private readonly prunedRows = new Counter({
    name: 'pruned_rows_total',
    help: 'Rows the retention job deleted (expired codes, ended grants and their refresh tokens, sessions, ...), by table',
    labelNames: ['table'] as const,
    registers: [this.registry],
  });

  constructor(
    private readonly config: MetricsConfig,
    dataSource: DataSource,
  ) {
    // Every series of a fixed label set exists from the start, at 0, so that rate() sees its first increment.
    for (const bucket of RATE_LIMIT_BUCKETS) this.rateLimitRefusals.inc({ bucket }, 0);
    if (!config.enabled) return;
    collectDefaultMetrics({ register: this.registry });
    if (dataSource.options.type === 'postgres') this.measurePool(dataSource);
  }

  get enabled(): boolean {
    return this.config.enabled;
  }

  /** The exposition (Prometheus text format) of every metric. */
  scrape(): Promise<string> {
    return this.registry.metrics();
  }

  /** One answered request (a bound function, for the access log to call); the hot path of every request. */
  readonly observeRequest: RequestObserver = (method, route, status, ms) => {
    const series = this.seriesOf(METHODS.has(method) ? method : 'OTHER', route ?? UNMATCHED_ROUTE, status);
    series.count++;
    series.durations.observe(ms / 1000);
  };

  /** The grant types the token endpoint answers: their series exist from the start, at 0. */
  declareGrantTypes(grantTypes: readonly string[]): void {
    for (const grantType of grantTypes) this.tokensIssued.inc({ grant_type: grantType }, 0);
  }

  tokenIssued(grantType: string): void {
    this.tokensIssued.inc({ grant_type: grantType });
  }

  refreshTokenReused(): void {
    this.refreshReuse.inc();
  }

  loginFailed(): void {
    this.loginFailures.inc();
  }

  @OnEvent(RATE_LIMIT_REFUSED)
  rateLimitRefused(bucket: RateLimitBucket): void {
    this.rateLimitRefusals.inc({ bucket });
  }

  rowsPruned(table: string, rows: number): void {
    this.prunedRows.inc({ table }, rows);
  }

  private seriesOf(method: string, route: string, status: number): RequestSeries {
    let byMethod = this.requestSeries.get(route);
    if (!byMethod) this.requestSeries.set(route, (byMethod = new Map()));
    let byStatus = byMethod.get(method);
    if (!byStatus) byMethod.set(method, (byStatus = new Map()));
    let series = byStatus.get(status);
    if (!series) {
      const labels = Object.freeze({ method, route, status: String(status) });
      series = { labels, durations: this.durations.labels(labels), count: 0 };
      byStatus.set(status, series);
      this.allRequestSeries.push(series);
    }
    return series;
  }

  /**
   * The connection pool of the PostgreSQL driver, read at each scrape (a reconnected data source has a new pool).
   * SQLite has no pool (one synchronous connection), so these gauges are not exposed there.
   */
  private measurePool(dataSource: DataSource): void {
    const pool = () => handlesOf(dataSource).pool;
    const gauge = (name: string, help: string, read: (pool: Pool) => number) =>
      new Gauge({
        name,
        help,
        registers: [this.registry],
        collect() {
          const current = pool();
          this.set(current ? read(current) : 0);
        },
      });
    gauge('db_pool_connections', 'Connections the PostgreSQL pool holds (busy and idle)', (p) => p.totalCount);
    gauge('db_pool_idle_connections', 'Connections of the PostgreSQL pool waiting for a query', (p) => p.idleCount);
    gauge('db_pool_waiting_requests', 'Queries waiting for a connection of the PostgreSQL pool', (p) => p.waitingCount);
  }
}
