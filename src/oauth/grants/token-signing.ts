import { type JwtModuleOptions, JwtSecretRequestType, type JwtSignOptions } from '@nestjs/jwt';
import type { SigningKeysService } from '../../keys/signing-keys.service';

/**
 * The sign options of a token: RS256 with the signing key `kid`, which {@link signingKeyProvider} resolves. The
 * registered claims (iss, sub, aud, jti) go in the payload rather than in jsonwebtoken's options, which it would
 * validate and copy there one by one, and the key is not in the options either, which `JwtService.sign` would
 * delete from its copy of them (a dictionary-mode object for V8).
 */
export function signedWith(kid: string, typ: 'at+jwt' | 'JWT'): JwtSignOptions {
  return { algorithm: 'RS256', header: { alg: 'RS256', typ, kid } };
}

/**
 * `@nestjs/jwt`'s key provider for this module's `JwtService`: the private key named by the `kid` of the token's
 * header, which the caller took from {@link SigningKeysService.activeKey} in the same synchronous step. The
 * service only signs: verification of access tokens is the auth module's (with the published public keys).
 */
export function signingKeyProvider(keys: Pick<SigningKeysService, 'privateKeyOf'>): JwtModuleOptions['secretOrKeyProvider'] {
  return (requestType, _payload, options) => {
    if (requestType !== JwtSecretRequestType.SIGN) throw new Error('this JwtService signs only');
    const kid = (options as JwtSignOptions | undefined)?.header?.kid;
    const key = kid === undefined ? undefined : keys.privateKeyOf(kid);
    if (!key) throw new Error(`no private key for kid ${String(kid)}`);
    return key;
  };
}
