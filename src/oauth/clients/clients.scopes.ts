import { defineScopes } from '../../auth/scopes';

export const ClientsScope = defineScopes({
  admin: { name: 'clients:admin', description: 'Manage the OAuth clients (administrators only)', role: 'admin' },
});
