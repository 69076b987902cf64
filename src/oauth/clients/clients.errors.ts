import { defineErrors } from '../../common/domain-error';

export const ClientsError = defineErrors({
  NotFound: { code: 'client-not-found', status: 404 },
  /** A combination the field rules cannot see (e.g. a public client with client_credentials). */
  InvalidClient: { code: 'invalid-client-settings', status: 400 },
});
