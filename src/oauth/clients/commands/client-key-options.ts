import { CommandRunner, Option } from 'nest-commander';

/** The `private_key_jwt` options that `client:create` and `client:update` share: the client's keys and its one algorithm. */
export abstract class ClientKeyOptions extends CommandRunner {
  @Option({
    flags: '--jwks-file <path>',
    description: 'private_key_jwt: a file holding the public keys as a JWK Set (JSON); client:update replaces the keys',
  })
  jwksFile(value: string): string {
    return value;
  }

  @Option({
    flags: '--jwks-uri <url>',
    description: 'private_key_jwt: an https URL of the public keys (a JWK Set); client:update replaces the keys',
  })
  jwksUri(value: string): string {
    return value;
  }

  @Option({
    flags: '--signing-alg <alg>',
    description: 'private_key_jwt: the one algorithm its assertions may use (RS256, ES256 or EdDSA/Ed25519)',
  })
  signingAlg(value: string): string {
    return value;
  }
}
