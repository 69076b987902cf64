import type { Histogram, Registry } from 'prom-client';

/** prom-client's default buckets (seconds): what the histogram had when prom-client's own `Histogram` kept it. */
export const DURATION_BUCKETS: readonly number[] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** The labels of one request series. */
export type RequestLabels = Readonly<Record<'method' | 'route' | 'status', string>>;

/** One series of the request metrics: its labels, made once, its count, and its durations by bucket. */
export interface RequestSeries {
  readonly labels: RequestLabels;
  count: number;
  /** Per bucket of {@link DURATION_BUCKETS}: the requests that took at most its bound and more than the one before. */
  readonly buckets: number[];
  /** The sum of the durations, in seconds. */
  sum: number;
}

/** A line of the exposition, as prom-client's registry reads it from a metric's `get()`. */
interface ExpositionValue {
  metricName: string;
  labels: Record<string, string | number>;
  value: number;
}

export function newRequestSeries(labels: RequestLabels): RequestSeries {
  return { labels, count: 0, buckets: DURATION_BUCKETS.map(() => 0), sum: 0 };
}

/** Counts one request of `seconds` in its series: a few additions, no label hashing. */
export function observeDuration(series: RequestSeries, seconds: number): void {
  series.count++;
  series.sum += seconds;
  for (let i = 0; i < DURATION_BUCKETS.length; i++) {
    if (seconds <= DURATION_BUCKETS[i]) {
      series.buckets[i]++;
      return;
    }
  }
  // Longer than the last bound: only in +Inf, which is the count.
}

/**
 * `http_request_duration_seconds`, a Prometheus histogram kept in the request series and read out at each scrape,
 * in the exposition prom-client's own `Histogram` gives (the same lines, labels and order). prom-client's
 * `observe` builds, checks and hashes the label set on every call, about 4 µs of every request; here a request
 * finds its series once (by route, method and status, as the request counter does) and adds to it.
 *
 * The registry reads a metric through its name, help, type, aggregator, `get()` and `reset()` only; prom-client's
 * type for `registerMetric` is the union of its own classes, hence the cast in {@link registerIn}.
 */
export class RequestDurationHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly series: () => readonly RequestSeries[],
  ) {}

  registerIn(registry: Registry): this {
    registry.registerMetric(this as unknown as Histogram);
    return this;
  }

  get(): Promise<{ name: string; help: string; type: 'histogram'; aggregator: 'sum'; values: ExpositionValue[] }> {
    const values: ExpositionValue[] = [];
    const bucket = `${this.name}_bucket`;
    for (const { labels, buckets, count, sum } of this.series()) {
      let cumulative = 0;
      for (let i = 0; i < DURATION_BUCKETS.length; i++) {
        cumulative += buckets[i];
        values.push({ metricName: bucket, labels: { le: DURATION_BUCKETS[i], ...labels }, value: cumulative });
      }
      values.push({ metricName: bucket, labels: { le: '+Inf', ...labels }, value: count });
      values.push({ metricName: `${this.name}_sum`, labels: { ...labels }, value: sum });
      values.push({ metricName: `${this.name}_count`, labels: { ...labels }, value: count });
    }
    return Promise.resolve({ name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values });
  }

  /** Zeroes every series (counts too: the request counter reads the same counts). */
  reset(): void {
    for (const series of this.series()) {
      series.count = 0;
      series.sum = 0;
      series.buckets.fill(0);
    }
  }
}
