import { bearerChallenge } from '../auth/bearer-challenge';
import { defineErrors } from '../common/domain-error';

/** Why a new password or email was refused without proof: the detail, also the challenge's description. */
export const OWN_CREDENTIALS_NEED_PROOF =
  'Changing the password or the email needs currentPassword, or an access token of a sign-in of level aal2.';
export const OTHERS_CREDENTIALS_NEED_AAL2 = "Changing another person's password or email needs an access token of a sign-in of level aal2.";

/** RFC 9470 3: the client may send the person through sign-in again with `acr_values=aal2`. */
const stepUp = (description: string) => ({
  'WWW-Authenticate': bearerChallenge({ error: 'insufficient_user_authentication', error_description: description, acr_values: 'aal2' }),
});

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
  CurrentPasswordRequired: { code: 'current-password-required', status: 401, headers: stepUp(OWN_CREDENTIALS_NEED_PROOF) },
  StrongerSignInRequired: { code: 'stronger-sign-in-required', status: 401, headers: stepUp(OTHERS_CREDENTIALS_NEED_AAL2) },
  CurrentPasswordWrong: { code: 'current-password-wrong', status: 403 },
  /** A person a company identity provider signs in: their password and e-mail are the provider's. */
  ManagedByConnection: { code: 'credentials-managed-by-connection', status: 409 },
});

export const MANAGED_BY_CONNECTION =
  "This person signs in through their company's identity provider: their password and e-mail are managed there.";
