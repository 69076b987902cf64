import { defineScopes } from '../auth/scopes';

export const ConnectionsScope = defineScopes({
  admin: { name: 'connections:admin', description: 'Manage the company sign-in connections (administrators only)', role: 'admin' },
});
