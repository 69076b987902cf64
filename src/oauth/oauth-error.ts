export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'invalid_scope'
  /** RFC 8707 2: a `resource` that is not a valid target for this client or grant. */
  | 'invalid_target'
  /** A pushed authorization request (RFC 9126 2.3) refused as /authorize would refuse it. */
  | 'unsupported_response_type'
  | 'request_not_supported'
  /** RFC 9449 5: a DPoP proof missing where required, or invalid. */
  | 'invalid_dpop_proof'
  /** RFC 9449 8: the proof must carry the nonce the DPoP-Nonce header gives. */
  | 'use_dpop_nonce'
  /** RFC 8628 3.5: a device's poll before the person has answered, too soon, after a denial, or too late. */
  | 'authorization_pending'
  | 'slow_down'
  | 'access_denied'
  | 'expired_token';

/**
 * RFC 6749 (4.1.2.1, 5.2): an error_description may only hold %x20-21 / %x23-5B / %x5D-7E. Descriptions can echo
 * what the client sent (a parameter name, a scope), so anything else is replaced.
 */
export function safeDescription(text: string): string {
  return text.replace(/[^\x20\x21\x23-\x5B\x5D-\x7E]/g, '?').slice(0, 500);
}

/** An RFC 6749 5.2 error answer of the token, revocation and introspection endpoints ({@link OAuthErrorFilter}). */
export class OAuthError extends Error {
  constructor(
    readonly error: OAuthErrorCode,
    readonly description: string,
    /** For invalid_client: the client tried HTTP Basic, so the answer carries a Basic challenge. */
    readonly basicChallenge = false,
  ) {
    super(description);
    this.name = 'OAuthError';
  }

  get status(): number {
    return this.error === 'invalid_client' ? 401 : 400;
  }
}
