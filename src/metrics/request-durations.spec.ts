import { Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { RequestDurationHistogram, type RequestSeries, newRequestSeries, observeDuration } from './request-durations';

const NAME = 'http_request_duration_seconds';
const HELP = 'Time to answer';

describe('RequestDurationHistogram', () => {
  // Durations on, between and beyond the bounds (0.005 and 10 are bounds; 12 is past the last one).
  const observations: Array<[Record<'method' | 'route' | 'status', string>, number]> = [
    [{ method: 'GET', route: '/api/resource', status: '200' }, 0.003],
    [{ method: 'GET', route: '/api/resource', status: '200' }, 0.005],
    [{ method: 'GET', route: '/api/resource', status: '200' }, 0.0051],
    [{ method: 'POST', route: '/token', status: '200' }, 0.02],
    [{ method: 'POST', route: '/token', status: '200' }, 10],
    [{ method: 'POST', route: '/token', status: '200' }, 12],
    [{ method: 'GET', route: 'unmatched', status: '404' }, 0.7],
  ];

  it("exposes exactly what prom-client's own Histogram exposes for the same requests", async () => {
    const reference = new Registry();
    const histogram = new Histogram({ name: NAME, help: HELP, labelNames: ['method', 'route', 'status'], registers: [reference] });
    const ours = new Registry();
    const series = new Map<string, RequestSeries>();
    new RequestDurationHistogram(NAME, HELP, () => [...series.values()]).registerIn(ours);
    for (const [labels, seconds] of observations) {
      histogram.observe(labels, seconds);
      const key = JSON.stringify(labels);
      if (!series.has(key)) series.set(key, newRequestSeries(Object.freeze({ ...labels })));
      observeDuration(series.get(key)!, seconds);
    }
    const text = await ours.metrics();
    expect(text).toBe(await reference.metrics());
    expect(text).toContain('http_request_duration_seconds_bucket{le="0.005",method="GET",route="/api/resource",status="200"} 2');
    expect(text).toContain('http_request_duration_seconds_bucket{le="0.01",method="GET",route="/api/resource",status="200"} 3');
    expect(text).toContain('http_request_duration_seconds_bucket{le="10",method="POST",route="/token",status="200"} 2');
    expect(text).toContain('http_request_duration_seconds_bucket{le="+Inf",method="POST",route="/token",status="200"} 3');
    expect(text).toContain('http_request_duration_seconds_sum{method="POST",route="/token",status="200"} 22.02');
    expect(text).toContain('http_request_duration_seconds_count{method="GET",route="unmatched",status="404"} 1');
  });

  it('starts every series from zero again when the registry is reset', async () => {
    const registry = new Registry();
    const one = newRequestSeries({ method: 'GET', route: '/a', status: '200' });
    new RequestDurationHistogram(NAME, HELP, () => [one]).registerIn(registry);
    observeDuration(one, 0.2);
    registry.resetMetrics();
    expect(one).toEqual({ labels: one.labels, count: 0, buckets: one.buckets.map(() => 0), sum: 0 });
    expect(await registry.metrics()).toContain('http_request_duration_seconds_count{method="GET",route="/a",status="200"} 0');
  });
});
