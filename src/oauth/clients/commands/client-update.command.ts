import { Command, Option } from 'nest-commander';
import { ClientKeyOptions } from './client-key-options';
import { CommandInputError, collect, printJson } from '../../../common/command-line';
import { readJwksFile } from './jwks-file';
import { ClientsService } from '../clients.service';

interface ClientUpdateOptions {
  clientId?: string;
  redirectUri?: string[];
  scope?: string;
  addScope?: string;
  removeScope?: string;
  postLogoutRedirectUri?: string[];
  clearPostLogoutRedirectUris?: boolean;
  authMethod?: string;
  jwksFile?: string;
  jwksUri?: string;
  signingAlg?: string;
}

/**
 * `client:update`: replaces a client's allowed scopes (or adds and removes some), redirect URIs, post-logout
 * redirect URIs and/or a private_key_jwt client's keys, e.g. `--add-scope products:read` to let an existing client
 * ask for a scope that a new module adds. Grants already given keep their scopes.
 */
@Command({
  name: 'client:update',
  description: "change a client's scopes, redirect URIs, post-logout redirect URIs or keys and print it as JSON",
})
export class ClientUpdateCommand extends ClientKeyOptions {
  constructor(private readonly clients: ClientsService) {
    super();
  }

  async run(_args: string[], options: ClientUpdateOptions): Promise<void> {
    if (options.clearPostLogoutRedirectUris && options.postLogoutRedirectUri) {
      throw new CommandInputError('--post-logout-redirect-uri and --clear-post-logout-redirect-uris exclude each other');
    }
    printJson(
      await this.clients.update(options.clientId ?? '', {
        scope: options.scope,
        addScope: options.addScope,
        removeScope: options.removeScope,
        redirectUris: options.redirectUri,
        postLogoutRedirectUris: options.clearPostLogoutRedirectUris ? [] : options.postLogoutRedirectUri,
        tokenEndpointAuthMethod: options.authMethod as 'private_key_jwt' | undefined,
        jwks: readJwksFile(options.jwksFile),
        jwksUri: options.jwksUri,
        tokenEndpointAuthSigningAlg: options.signingAlg,
      }),
    );
  }

  @Option({ flags: '--client-id <id>', required: true })
  clientId(value: string): string {
    return value;
  }

  @Option({ flags: '--redirect-uri <uri>', description: 'may be given several times; replaces the list' })
  redirectUri(value: string, previous?: string[]): string[] {
    return collect(value, previous);
  }

  @Option({ flags: '--post-logout-redirect-uri <uri>', description: 'may be given several times; replaces the list' })
  postLogoutRedirectUri(value: string, previous?: string[]): string[] {
    return collect(value, previous);
  }

  @Option({ flags: '--clear-post-logout-redirect-uris', description: 'removes every post-logout redirect URI' })
  clearPostLogoutRedirectUris(): boolean {
    return true;
  }

  @Option({ flags: '--scope <scopes>', description: 'space-separated; replaces the allowed scopes' })
  scope(value: string): string {
    return value;
  }

  @Option({ flags: '--add-scope <scopes>', description: 'space-separated; added to the allowed scopes' })
  addScope(value: string): string {
    return value;
  }

  @Option({ flags: '--remove-scope <scopes>', description: 'space-separated; taken from the allowed scopes' })
  removeScope(value: string): string {
    return value;
  }

  @Option({
    flags: '--auth-method <method>',
    description:
      'private_key_jwt: a confidential client with a secret authenticates with its key from now on (the secret stops working); needs --jwks-file or --jwks-uri',
  })
  authMethod(value: string): string {
    return value;
  }
}
