import { Command, Option } from 'nest-commander';
import { ClientKeyOptions } from './client-key-options';
import { collect, printJson } from '../../../common/command-line';
import { readJwksFile } from './jwks-file';
import { ClientsService } from '../clients.service';
import { type TokenEndpointAuthMethod } from '../client-metadata';

interface ClientCreateOptions {
  name?: string;
  redirectUri?: string[];
  public?: boolean;
  trusted?: boolean;
  minimumAcr?: string;
  requirePar?: boolean;
  requireDpop?: boolean;
  scope?: string;
  grant?: string[];
  refreshGrace?: number;
  resource?: string[];
  postLogoutRedirectUri?: string[];
  authMethod?: string;
  jwksFile?: string;
  jwksUri?: string;
  signingAlg?: string;
}

/** `client:create`: registers a client; a confidential client's secret is printed once and stored as a hash. */
@Command({ name: 'client:create', description: 'register an OAuth client and print it as JSON' })
export class ClientCreateCommand extends ClientKeyOptions {
  constructor(private readonly clients: ClientsService) {
    super();
  }

  async run(_args: string[], options: ClientCreateOptions): Promise<void> {
    printJson(
      await this.clients.create({
        name: options.name ?? '',
        redirectUris: options.redirectUri ?? [],
        isPublic: options.public,
        trusted: options.trusted,
        minimumAcr: options.minimumAcr,
        requirePushedRequests: options.requirePar,
        dpopBoundAccessTokens: options.requireDpop,
        scope: options.scope,
        grantTypes: options.grant,
        refreshGraceSeconds: options.refreshGrace,
        resources: options.resource,
        postLogoutRedirectUris: options.postLogoutRedirectUri,
        tokenEndpointAuthMethod: options.authMethod as TokenEndpointAuthMethod | undefined,
        jwks: readJwksFile(options.jwksFile),
        jwksUri: options.jwksUri,
        tokenEndpointAuthSigningAlg: options.signingAlg,
      }),
    );
  }

  @Option({ flags: '--name <name>' })
  name(value: string): string {
    return value;
  }

  @Option({ flags: '--redirect-uri <uri>', description: 'may be given several times' })
  redirectUri(value: string, previous?: string[]): string[] {
    return collect(value, previous);
  }

  @Option({
    flags: '--post-logout-redirect-uri <uri>',
    description: 'where the browser may be sent after an OpenID Connect logout (RP-initiated); may be given several times',
  })
  postLogoutRedirectUri(value: string, previous?: string[]): string[] {
    return collect(value, previous);
  }

  @Option({ flags: '--public', description: 'a public client (PKCE, no secret)' })
  public(): boolean {
    return true;
  }

  @Option({
    flags: '--minimum-acr <level>',
    description: 'the sign-in level every person it signs in must reach: aal1, aal2 (two factors) or phr (a passkey)',
  })
  minimumAcr(value: string): string {
    return value;
  }

  @Option({ flags: '--require-par', description: 'its authorization requests must be pushed to /par (RFC 9126)' })
  requirePar(): boolean {
    return true;
  }

  @Option({
    flags: '--require-dpop',
    description: 'its token requests must carry a DPoP proof: its access tokens are bound to a key (RFC 9449)',
  })
  requireDpop(): boolean {
    return true;
  }

  @Option({ flags: '--trusted', description: 'skip the consent page' })
  trusted(): boolean {
    return true;
  }

  @Option({
    flags: '--grant <type>',
    description:
      'a grant the client may use: authorization_code, refresh_token, client_credentials, urn:ietf:params:oauth:grant-type:token-exchange (RFC 8693, confidential clients); may be given several times (default: authorization_code and refresh_token)',
  })
  grant(value: string, previous?: string[]): string[] {
    return collect(value, previous);
  }

  @Option({
    flags: '--refresh-grace <seconds>',
    description: 'seconds in which a just-rotated refresh token still returns its one successor (default 0: off; at most 60)',
  })
  refreshGrace(value: string): number {
    // Anything but digits becomes NaN, which the service refuses with its own message.
    return /^\d+$/.test(value) ? Number(value) : Number.NaN;
  }

  @Option({
    flags: '--resource <uri>',
    description: 'a resource (RFC 8707) besides this API the client may ask tokens for; may be given several times',
  })
  resource(value: string, previous?: string[]): string[] {
    return collect(value, previous);
  }

  @Option({ flags: '--scope <scopes>', description: 'space-separated; every scope when omitted' })
  scope(value: string): string {
    return value;
  }

  @Option({
    flags: '--auth-method <method>',
    description:
      "a confidential client's one authentication method: client_secret_basic, client_secret_post or private_key_jwt (no secret; needs --jwks-file or --jwks-uri)",
  })
  authMethod(value: string): string {
    return value;
  }
}
