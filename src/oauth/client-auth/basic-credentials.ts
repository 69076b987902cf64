/** Credentials of an `Authorization: Basic` header, form-URL-decoded as RFC 6749 2.3.1 asks. */
export interface BasicCredentials {
  id: string;
  secret: string;
}

function formDecode(value: string): string {
  // Most ids and secrets have nothing to decode.
  if (!value.includes('%') && !value.includes('+')) return value;
  return decodeURIComponent(value.replace(/\+/g, ' '));
}

/**
 * `undefined` when the header is not Basic at all; `null` when it is Basic but malformed.
 */
export function parseBasicCredentials(header: string | undefined): BasicCredentials | null | undefined {
  if (header === undefined || !/^basic[ \t]/i.test(header)) return undefined;
  const match = /^basic[ \t]+([A-Za-z0-9+/=]+)[ \t]*$/i.exec(header);
  if (!match) return null;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return null;
  try {
    return { id: formDecode(decoded.slice(0, colon)), secret: formDecode(decoded.slice(colon + 1)) };
  } catch {
    return null;
  }
}
