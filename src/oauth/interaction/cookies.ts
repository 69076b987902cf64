import type { INestApplication } from '@nestjs/common';
import type { CookieOptions, Request, Response } from 'express';

/**
 * The one set of cookie rules of the sign-in pages: HttpOnly, SameSite=Lax, Path=/, and on an https issuer Secure
 * with the `__Host-` prefix (no Domain: no subdomain can set, shadow or toss one of these cookies). Every cookie is
 * written with Express's `res.cookie` and read by the same name.
 */
const SECURE_COOKIES = 'secure cookies';

/** Records on the Express app (its documented settings) whether the issuer is https, which names and marks cookies. */
export function configureCookies(app: INestApplication & { set(name: string, value: unknown): unknown }, secure: boolean): void {
  app.set(SECURE_COOKIES, secure);
}

function isSecure(req: Request): boolean {
  return req.app.get(SECURE_COOKIES) === true;
}

/** A cookie's name on the wire: `__Host-` prefixed where cookies are Secure. */
export function cookieName(name: string, secure: boolean): string {
  return secure ? `__Host-${name}` : name;
}

function optionsFor(secure: boolean): CookieOptions {
  return { path: '/', httpOnly: true, sameSite: 'lax', secure };
}

export function readCookie(req: Request, name: string): string | undefined {
  const header = req.headers.cookie;
  if (!header) return undefined;
  const wanted = cookieName(name, isSecure(req));
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === wanted) {
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

/** Sets a cookie under the rules above; a session cookie (ends with the browser) without `maxAgeSeconds`. */
export function setCookie(res: Response, name: string, value: string, maxAgeSeconds?: number): void {
  const secure = isSecure(res.req);
  const options = optionsFor(secure);
  res.cookie(cookieName(name, secure), value, maxAgeSeconds === undefined ? options : { ...options, maxAge: maxAgeSeconds * 1000 });
}

export function clearCookie(res: Response, name: string): void {
  const secure = isSecure(res.req);
  res.clearCookie(cookieName(name, secure), optionsFor(secure));
}

export const SESSION_COOKIE = 'oauth_session';

/** The login session cookie: lives as long as the session. */
export const sessionCookie = {
  read: (req: Request): string | undefined => readCookie(req, SESSION_COOKIE),
  write(res: Response, secret: string, config: { sessionTtl: number }): void {
    setCookie(res, SESSION_COOKIE, secret, config.sessionTtl);
  },
  clear(res: Response): void {
    clearCookie(res, SESSION_COOKIE);
  },
};
