import { defineScopes } from '../auth/scopes';

export const OrdersScope = defineScopes({
  read: { name: 'orders:read', description: 'See orders' },
  write: { name: 'orders:write', description: 'Place orders' },
});
