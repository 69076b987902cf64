import { InvalidJwksError, checkedJwks, checkedJwksUri, checkedSigningAlg, keyFitsAlg } from '../client-auth/client-jwks';
import type { Client } from '../entities/client.entity';
import { type CreateClientInput, InvalidClientInputError, TOKEN_ENDPOINT_AUTH_METHODS, type UpdateClientInput } from './client-metadata';

/** A `private_key_jwt` client's keys: `jwks` or `jwksUri` (one of them), and its algorithm if it names one. */
export type KeySettings = Pick<Client, 'jwks' | 'jwksUri' | 'tokenEndpointAuthSigningAlg'>;

const NO_KEYS: KeySettings = { jwks: null, jwksUri: null, tokenEndpointAuthSigningAlg: null };

function checkedKeySettings(input: { jwks?: unknown; jwksUri?: unknown; tokenEndpointAuthSigningAlg?: unknown }): KeySettings {
  if ((input.jwks === undefined) === (input.jwksUri === undefined)) {
    throw new InvalidClientInputError('private_key_jwt needs the public keys as either jwks or jwks_uri (one of them)');
  }
  try {
    const settings = {
      jwks: input.jwks === undefined ? null : checkedJwks(input.jwks),
      jwksUri: input.jwksUri === undefined ? null : checkedJwksUri(input.jwksUri),
      tokenEndpointAuthSigningAlg:
        input.tokenEndpointAuthSigningAlg === undefined ? null : checkedSigningAlg(input.tokenEndpointAuthSigningAlg),
    };
    // A pinned algorithm that none of the inline keys can verify would leave the client unable to authenticate.
    const alg = settings.tokenEndpointAuthSigningAlg;
    if (alg && settings.jwks && !settings.jwks.keys.some((key) => keyFitsAlg(key, alg))) {
      throw new InvalidClientInputError(`token_endpoint_auth_signing_alg ${alg} fits none of the keys`);
    }
    return settings;
  } catch (error) {
    if (error instanceof InvalidJwksError) throw new InvalidClientInputError(error.message);
    throw error;
  }
}

/**
 * A client's new keys (`client:update`, the admin API): a `private_key_jwt` client's replaced, or a confidential
 * client with a secret made a `private_key_jwt` one (its secret hash goes: the secret stops working).
 */
export function changedKeys(client: Client, changes: UpdateClientInput): Partial<Client> {
  if (client.isPublic) throw new InvalidClientInputError('a public client has no keys (jwks, jwks_uri)');
  if (changes.tokenEndpointAuthMethod !== undefined && changes.tokenEndpointAuthMethod !== 'private_key_jwt') {
    throw new InvalidClientInputError('--auth-method can only be changed to private_key_jwt');
  }
  const method = changes.tokenEndpointAuthMethod ?? client.tokenEndpointAuthMethod;
  if (method !== 'private_key_jwt') {
    throw new InvalidClientInputError('jwks and jwks_uri are for private_key_jwt clients: give --auth-method private_key_jwt with them');
  }
  // A private_key_jwt client named no new keys (only an algorithm): its keys stay.
  const keep = changes.jwks === undefined && changes.jwksUri === undefined && client.tokenEndpointAuthMethod === 'private_key_jwt';
  const keys = checkedKeySettings({
    jwks: keep ? (client.jwks ?? undefined) : changes.jwks,
    jwksUri: keep ? (client.jwksUri ?? undefined) : changes.jwksUri,
    // The algorithm stays unless a new one is named.
    tokenEndpointAuthSigningAlg: changes.tokenEndpointAuthSigningAlg ?? client.tokenEndpointAuthSigningAlg ?? undefined,
  });
  return { ...keys, tokenEndpointAuthMethod: 'private_key_jwt', secretHash: null };
}

/** The keys of a new client: only `private_key_jwt` has (and needs) them. */
export function keySettingsFor(input: CreateClientInput): KeySettings {
  const method = input.tokenEndpointAuthMethod;
  if (method !== undefined && !TOKEN_ENDPOINT_AUTH_METHODS.includes(method)) {
    throw new InvalidClientInputError(`--auth-method must be one of: ${TOKEN_ENDPOINT_AUTH_METHODS.join(', ')}`);
  }
  if (method === 'private_key_jwt') {
    if (input.isPublic) throw new InvalidClientInputError('a --public client has no authentication method (not private_key_jwt)');
    return checkedKeySettings(input);
  }
  if (input.jwks !== undefined || input.jwksUri !== undefined || input.tokenEndpointAuthSigningAlg !== undefined) {
    throw new InvalidClientInputError('jwks, jwks_uri and token_endpoint_auth_signing_alg are for private_key_jwt clients only');
  }
  return NO_KEYS;
}
