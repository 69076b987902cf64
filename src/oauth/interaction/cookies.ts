import type { Request, Response } from 'express';

export function readCookie(req: Request, name: string): string | undefined {
  const header = req.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) {
      const value = part.slice(eq + 1).trim();
      try {
        return decodeURIComponent(value);
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}

export interface CookieOptions {
  maxAgeSeconds?: number;
  secure: boolean;
}

/** HttpOnly, SameSite=Lax, Path=/ (+Secure on https): the only kind of cookie this service sets. */
export function setCookie(res: Response, name: string, value: string, options: CookieOptions): void {
  const parts = [`${name}=${encodeURIComponent(value)}`, 'Path=/', 'HttpOnly', 'SameSite=Lax'];
  if (options.maxAgeSeconds !== undefined) parts.push(`Max-Age=${options.maxAgeSeconds}`);
  if (options.secure) parts.push('Secure');
  res.append('Set-Cookie', parts.join('; '));
}

export function clearCookie(res: Response, name: string, secure: boolean): void {
  setCookie(res, name, '', { maxAgeSeconds: 0, secure });
}

export const SESSION_COOKIE = 'oauth_session';

/** The login session cookie: lives as long as the session, Secure when the issuer is https. */
export const sessionCookie = {
  read: (req: Request): string | undefined => readCookie(req, SESSION_COOKIE),
  write(res: Response, secret: string, config: { sessionTtl: number; secureCookies: boolean }): void {
    setCookie(res, SESSION_COOKIE, secret, { maxAgeSeconds: config.sessionTtl, secure: config.secureCookies });
  },
  clear(res: Response, config: { secureCookies: boolean }): void {
    clearCookie(res, SESSION_COOKIE, config.secureCookies);
  },
};
