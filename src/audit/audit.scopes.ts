import { defineScopes } from '../auth/scopes';

export const AuditScope = defineScopes({
  read: { name: 'audit:read', description: 'Read the security audit trail (administrators only)', role: 'admin' },
});
