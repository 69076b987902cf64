import { CONTROL_CHARACTER } from '../../../common/text';

/** The longest client ID URL taken (the client id columns hold 255 characters). */
export const MAX_CLIENT_ID_URL_LENGTH = 255;

/**
 * Whether `value` is a client identifier URL (draft-ietf-oauth-client-id-metadata-document, "Client Identifier
 * URL"): https, a path below the root, no fragment, no user info, no `.` or `..` segment (also percent-encoded).
 * A query is allowed, as the draft allows it. It must be written the way the URL parser writes it (lower-case
 * host, no default port, no needless escapes), so that one client has one id and the document's `client_id` is
 * compared with exactly what was sent.
 */
export function isClientIdUrl(value: string): boolean {
  if (value.length > MAX_CLIENT_ID_URL_LENGTH || !value.startsWith('https://') || /\s/.test(value) || CONTROL_CHARACTER.test(value)) {
    return false;
  }
  if (value.includes('#') || !URL.canParse(value)) return false;
  const url = new URL(value);
  if (url.href !== value || url.username || url.password || !url.hostname) return false;
  if (url.pathname === '/' || url.pathname === '') return false;
  // The parser removes dot segments, so an id that had one is not written as the parser writes it; encoded ones stay.
  const segments = url.pathname.split('/').slice(1);
  return !segments.some((segment) => /^(?:\.|%2e){1,2}$/i.test(segment));
}
