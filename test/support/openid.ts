import * as client from 'openid-client';
import type { ClientView } from '../../src/oauth/clients/client-metadata';
import { REDIRECT_URI } from './oauth';

/** openid-client over plain HTTP, which it refuses by default: the test app listens on http://127.0.0.1. */
export const INSECURE = { execute: [client.allowInsecureRequests] };

/** A relying party configured from discovery alone, checking ID-token signatures against the JWKS as well. */
export async function relyingPartyOf(issuer: URL, view: ClientView): Promise<client.Configuration> {
  const config = await client.discovery(issuer, view.client_id, view.client_secret, client.ClientSecretBasic(view.client_secret), INSECURE);
  client.enableNonRepudiationChecks(config);
  return config;
}

/**
 * An authorization request as openid-client builds it (code flow, PKCE S256, state, nonce; scope `openid profile`
 * unless `params` say otherwise): its path on the server, and what the relying party keeps to check the answer.
 */
export async function authorizationRequest(config: client.Configuration, params: Record<string, string> = {}) {
  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const nonce = client.randomNonce();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT_URI,
    scope: 'openid profile',
    state,
    nonce,
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    ...params,
  });
  return { path: url.pathname + url.search, verifier, state, nonce };
}
