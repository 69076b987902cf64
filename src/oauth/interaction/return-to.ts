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
