import { defineErrors } from '../common/domain-error';

export const OrdersError = defineErrors({
  NotFound: { code: 'order-not-found', status: 404 },
});
