import { bearerChallenge } from '../common/bearer-challenge';
import { defineErrors } from '../common/domain-error';

export const UsersError = defineErrors({
  NotFound: { code: 'user-not-found', status: 404 },
  EmailTaken: { code: 'email-taken', status: 409 },
  RoleChangeForbidden: { code: 'role-change-forbidden', status: 403 },
  // The token verified, but its user is gone: to the client that is an invalid token (RFC 6750 3.1).
  UnknownPrincipal: {
    code: 'unknown-principal',
    status: 401,
    headers: { 'WWW-Authenticate': bearerChallenge({ error: 'invalid_token' }) },
  },
});
