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
