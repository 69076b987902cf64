import { defineErrors } from '../common/domain-error';

export const ConnectionsError = defineErrors({
  NotFound: { code: 'connection-not-found', status: 404 },
  /** Another connection already serves one of the domains. */
  DomainTaken: { code: 'connection-domain-taken', status: 409 },
});
