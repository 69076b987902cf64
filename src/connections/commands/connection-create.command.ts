import { readFileSync } from 'node:fs';
import { Command, CommandRunner, Option } from 'nest-commander';
import { BY_SYSTEM } from '../../audit/audit-events';
import { CommandInputError, collect, printJson, validatedInput } from '../../common/command-line';
import { ConnectionsService } from '../connections.service';
import { CreateConnectionDto } from '../dto/create-connection.dto';

interface ConnectionCreateOptions {
  name?: string;
  issuer?: string;
  clientId?: string;
  clientSecretFile?: string;
  domain?: string[];
  adminGroup?: string[];
  trustUpstreamMfa?: boolean;
}

/** The client secret from a file (never an argument, which other users of the machine can read), trimmed. */
function secretFrom(file: string | undefined): string | undefined {
  if (file === undefined) return undefined;
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    throw new CommandInputError(`cannot read the client secret file "${file}"`);
  }
}

/** `connection:create`: what `POST /admin/connections` does, with the same rules (audited as the system's). */
@Command({ name: 'connection:create', description: 'add a company sign-in connection (OpenID Connect) and print it as JSON' })
export class ConnectionCreateCommand extends CommandRunner {
  constructor(private readonly connections: ConnectionsService) {
    super();
  }

  async run(_args: string[], options: ConnectionCreateOptions): Promise<void> {
    const input = await validatedInput(CreateConnectionDto, {
      name: options.name,
      type: 'oidc',
      issuer: options.issuer,
      client_id: options.clientId,
      client_secret: secretFrom(options.clientSecretFile),
      domains: options.domain ?? [],
      trust_upstream_mfa: options.trustUpstreamMfa ?? false,
      admin_groups: options.adminGroup,
    });
    printJson(await this.connections.create(input, BY_SYSTEM));
  }

  @Option({ flags: '--name <name>' })
  name(value: string): string {
    return value;
  }

  @Option({ flags: '--issuer <url>', description: "the provider's issuer identifier" })
  issuer(value: string): string {
    return value;
  }

  @Option({ flags: '--client-id <id>' })
  clientId(value: string): string {
    return value;
  }

  @Option({ flags: '--client-secret-file <path>', description: 'a file holding the client secret' })
  clientSecretFile(value: string): string {
    return value;
  }

  @Option({ flags: '--domain <domain>', description: 'an e-mail domain it serves (repeat for more)' })
  domain(value: string, previous?: string[]): string[] {
    return collect(value, previous);
  }

  @Option({ flags: '--admin-group <group>', description: 'an upstream group whose people are administrators (repeat for more)' })
  adminGroup(value: string, previous?: string[]): string[] {
    return collect(value, previous);
  }

  @Option({ flags: '--trust-upstream-mfa', description: "count the provider's MFA as this service's aal2" })
  trustUpstreamMfa(): boolean {
    return true;
  }
}
