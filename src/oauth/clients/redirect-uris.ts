const LOOPBACK_IPS = new Set(['127.0.0.1', '[::1]']);

/** The URI without its port when it is http on a loopback IP literal, else undefined. */
function loopbackWithoutPort(uri: string): string | undefined {
  if (!URL.canParse(uri)) return undefined;
  const url = new URL(uri);
  if (url.protocol !== 'http:' || !LOOPBACK_IPS.has(url.hostname)) return undefined;
  url.port = '';
  return url.href;
}

/**
 * Whether `presented` is one of a client's registered redirect URIs: the same string, or — for http on a loopback
 * IP literal — the same but for the port, which a native app picks when it starts listening (RFC 8252 7.3).
 */
export function isRegisteredRedirectUri(registered: readonly string[], presented: string): boolean {
  if (registered.includes(presented)) return true;
  const portless = loopbackWithoutPort(presented);
  return portless !== undefined && registered.some((uri) => loopbackWithoutPort(uri) === portless);
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

/** Whether a redirect URI's host is the person's own machine (a loopback address or `localhost`). */
export function isLoopbackRedirectUri(uri: string): boolean {
  return URL.canParse(uri) && LOOPBACK_HOSTS.has(new URL(uri).hostname);
}

/**
 * What is wrong with a redirect URI that a client states for itself rather than an operator (a client ID metadata
 * document): it must be absolute, https or http on a loopback address, without fragment or credentials, and
 * without spaces (stored space-free). Undefined when it is fine.
 */
export function selfAssertedRedirectUriProblem(value: unknown): string | undefined {
  if (typeof value !== 'string' || !URL.canParse(value)) return 'a redirect URI is not an absolute URI';
  const url = new URL(value);
  if (value.includes('#')) return 'a redirect URI must not have a fragment';
  if (/\s/.test(value)) return 'a redirect URI must not contain spaces';
  const https = url.protocol === 'https:';
  const loopback = url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname);
  if (!https && !loopback) return 'a redirect URI must be https, or http on a loopback address';
  if (url.username || url.password) return 'a redirect URI must not hold credentials';
  return undefined;
}
