import { defineErrors } from '../common/domain-error';

export const MetricsError = defineErrors({
  /** `METRICS=off`: the route answers as if it did not exist. */
  Off: { code: 'metrics-off', status: 404 },
  Forbidden: { code: 'metrics-forbidden', status: 403 },
});
