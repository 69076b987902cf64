import * as client from 'openid-client';
import type { ClientView } from '../../src/oauth/clients.service';

/** openid-client over plain HTTP, which it refuses by default: the test app listens on http://127.0.0.1. */
export const INSECURE = { execute: [client.allowInsecureRequests] };

/** A relying party configured from discovery alone, checking ID-token signatures against the JWKS as well. */
export async function relyingPartyOf(issuer: URL, view: ClientView): Promise<client.Configuration> {
  const config = await client.discovery(issuer, view.client_id, view.client_secret, client.ClientSecretBasic(view.client_secret), INSECURE);
  client.enableNonRepudiationChecks(config);
  return config;
}
