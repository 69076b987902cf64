import { Injectable } from '@nestjs/common';
import type * as OpenIdClient from 'openid-client';
import { AppConfig } from '../config/app-config';
import { hashSecret } from '../crypto/secrets';
import type { Connection } from './connection.entity';
import { ConnectionsRepository } from './connections.repository';
import { ConnectionsService } from './connections.service';

/** How long a person has to come back from the upstream's sign-in. */
const LOGIN_TTL_MS = 10 * 60_000;
/** The path the upstream sends people back to (registered there as the redirect URI). */
export const CALLBACK_PATH = '/login/connections/callback';

/** What a finished upstream sign-in gives: the connection and the ID token's claims, checked by openid-client. */
export interface UpstreamSignIn {
  connection: Connection;
  claims: OpenIdClient.IDToken;
  returnTo: string;
}

/** openid-client, loaded at the first sign-in through a connection (about 7 MB an instance without one keeps). */
function openIdClient(): Promise<typeof OpenIdClient> {
  return import('openid-client');
}

/**
 * Why an upstream sign-in did not finish: `message` for the page the person sees (never the upstream's own words),
 * `reason` for the log (openid-client's code and what it found).
 */
export class UpstreamSignInError extends Error {
  constructor(
    message: string,
    readonly reason?: string,
  ) {
    super(message);
  }
}

/** openid-client's error as one line: its code and message, and its cause's. */
function reasonOf(error: unknown): string {
  const { code, message, cause } = error as { code?: string; message?: string; cause?: unknown };
  const because = cause instanceof Error ? `: ${cause.message}` : '';
  return `${code ?? 'error'} ${message ?? ''}${because}`;
}

/**
 * A connection to an upstream OpenID Connect provider as a relying party, through openid-client (a certified RP):
 * discovery, the code flow with PKCE, `state` and `nonce`, and the ID token's checks (issuer, audience, signature,
 * expiry, nonce) and RFC 9207's `iss` in the answer, against mix-up.
 */
@Injectable()
export class OidcUpstream {
  /** Discovered configurations, by connection and its version (a changed connection is discovered again). */
  private readonly configurations = new Map<string, Promise<OpenIdClient.Configuration>>();

  constructor(
    private readonly connections: ConnectionsService,
    private readonly repository: ConnectionsRepository,
    private readonly config: AppConfig,
  ) {}

  get redirectUri(): string {
    return `${this.config.issuer}${CALLBACK_PATH}`;
  }

  /** The upstream's authorization URL for a new sign-in, remembered by its `state` (which the caller sets as a cookie too). */
  async start(connection: Connection, returnTo: string): Promise<{ url: URL; state: string }> {
    const client = await openIdClient();
    const configuration = await this.configurationOf(connection);
    const state = client.randomState();
    const nonce = client.randomNonce();
    const verifier = client.randomPKCECodeVerifier();
    const stateHash = hashSecret(state);
    await this.repository.startLogin({
      stateHash,
      connectionId: connection.id,
      nonce,
      codeVerifier: this.connections.seal(`connection-login:${stateHash}`, verifier),
      returnTo,
      expiresAt: Date.now() + LOGIN_TTL_MS,
    });
    const url = client.buildAuthorizationUrl(configuration, {
      redirect_uri: this.redirectUri,
      scope: 'openid email profile',
      state,
      nonce,
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    });
    return { url, state };
  }

  /** Finishes the sign-in the upstream sent back to `currentUrl` (once: its `state` is spent either way). */
  async finish(currentUrl: URL, state: string): Promise<UpstreamSignIn> {
    const stateHash = hashSecret(state);
    const login = await this.repository.takeLogin(stateHash, Date.now());
    if (!login) throw new UpstreamSignInError('This sign-in expired or was already used.');
    const connection = await this.connections.find(login.connectionId);
    if (!connection) throw new UpstreamSignInError('This sign-in expired or was already used.');
    const client = await openIdClient();
    const configuration = await this.configurationOf(connection);
    try {
      const tokens = await client.authorizationCodeGrant(configuration, currentUrl, {
        pkceCodeVerifier: this.connections.open(`connection-login:${stateHash}`, login.codeVerifier),
        expectedState: state,
        expectedNonce: login.nonce,
        idTokenExpected: true,
      });
      const claims = tokens.claims();
      if (!claims) throw new UpstreamSignInError('The identity provider sent no ID token.');
      return { connection, claims, returnTo: login.returnTo };
    } catch (error) {
      if (error instanceof UpstreamSignInError) throw error;
      throw new UpstreamSignInError("The identity provider's answer was refused.", reasonOf(error));
    }
  }

  private async configurationOf(connection: Connection): Promise<OpenIdClient.Configuration> {
    const key = `${connection.id}:${connection.updatedAt}`;
    const client = await openIdClient();
    let found = this.configurations.get(key);
    if (!found) {
      const secret = this.connections.clientSecretOf(connection);
      const insecure = new URL(connection.issuer).protocol === 'http:' && !this.config.production;
      found = client
        .discovery(new URL(connection.issuer), connection.clientId, undefined, secret ? client.ClientSecretBasic(secret) : client.None(), {
          execute: insecure ? [client.allowInsecureRequests] : [],
          timeout: 10,
        })
        .catch((error: unknown) => {
          this.configurations.delete(key);
          throw new UpstreamSignInError('The identity provider could not be reached.', reasonOf(error));
        });
      this.configurations.set(key, found);
    }
    return found;
  }
}
