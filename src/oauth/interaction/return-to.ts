const BASE = 'http://return-to.invalid';

/** `return_to` may only be a relative path on this server; anything else (other hosts, `//x`, `/\x`) is `/`. */
export function safeReturnTo(value: unknown): string {
  if (typeof value !== 'string' || value.length > 4096) return '/';
  if (!value.startsWith('/') || value.startsWith('//') || value.startsWith('/\\')) return '/';
  // Control characters are exactly what this refuses (browsers strip some of them from URLs).
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f\\]/.test(value)) return '/';
  try {
    const url = new URL(value, BASE);
    if (url.origin !== BASE) return '/';
    return url.pathname + url.search;
  } catch {
    return '/';
  }
}

/**
 * Where the login page sends the person back to: the authorization request as sent, but when it asked for a new
 * login (`max_age`, prompt=login or select_account) without `prompt=login`, `select_account` and `max_age`, since
 * that login has then happened. The other parameters stay byte for byte as the client sent them (decoding and
 * encoding again would change a `state` with an escape that is not UTF-8).
 */
export function returnToAfterLogin(originalUrl: string, prompt: ReadonlySet<string>, maxAge: number | null): string {
  if (maxAge === null && !prompt.has('login') && !prompt.has('select_account')) return originalUrl;
  const at = originalUrl.indexOf('?');
  const path = at === -1 ? originalUrl : originalUrl.slice(0, at);
  const pairs = at === -1 ? [] : originalUrl.slice(at + 1).split('&');
  const kept = pairs.filter((pair) => !['prompt', 'max_age'].includes(queryName(pair)));
  const rest = [...prompt].filter((p) => p !== 'login' && p !== 'select_account');
  if (rest.length) kept.push(`prompt=${encodeURIComponent(rest.join(' '))}`);
  return kept.length ? `${path}?${kept.join('&')}` : path;
}

/** The name of a `name=value` pair of a query string, decoded as the query parser decodes it. */
function queryName(pair: string): string {
  const raw = pair.split('=', 1)[0].replace(/\+/g, ' ');
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}
