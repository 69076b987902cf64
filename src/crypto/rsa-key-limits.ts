/** The RSA moduli accepted from a client (a DPoP proof's `jwk`, a client's JWK Set): 2048 to 4096 bits. */
export const RSA_MIN_BITS = 2048;
export const RSA_MAX_BITS = 4096;

/** `e` = 65537, as every current library makes keys: a larger exponent makes each verification cost more. */
const RSA_EXPONENT = 'AQAB';
const BASE64URL = /^[A-Za-z0-9_-]+$/;

/**
 * Why an RSA public key given as JWK members is refused, or undefined when it is fit to import: checked on the
 * strings alone, before any key is built, so an oversized modulus or exponent costs nothing but this look.
 */
export function rsaKeyProblem(n: unknown, e: unknown): string | undefined {
  if (e !== RSA_EXPONENT) return 'an RSA key must have the public exponent 65537 (e AQAB)';
  // 4096 bits are 683 base64url characters; a longer string is refused before it is decoded.
  if (typeof n !== 'string' || n.length > 690 || !BASE64URL.test(n)) return `an RSA key must have ${RSA_MIN_BITS} to ${RSA_MAX_BITS} bits`;
  const bytes = Buffer.from(n, 'base64url');
  const start = bytes.findIndex((byte) => byte !== 0);
  const bits = start < 0 ? 0 : (bytes.length - start - 1) * 8 + (32 - Math.clz32(bytes[start]));
  if (bits < RSA_MIN_BITS || bits > RSA_MAX_BITS) return `an RSA key must have ${RSA_MIN_BITS} to ${RSA_MAX_BITS} bits`;
  return undefined;
}
