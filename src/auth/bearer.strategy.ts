import { Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import type { Request } from 'express';
import { Strategy } from 'passport-http-bearer';
import { AccessTokenVerifier } from './access-token-verifier.service';
import type { AuthPrincipal } from './principal';

/**
 * The credentials of an Authorization header of the scheme `Bearer` or `DPoP` (any case), then one or more spaces
 * or tabs and whatever follows (RFC 6750 2.1: `Bearer 1*SP b64token`; RFC 9449 7.1), trimmed: '' when there are
 * none, null for another scheme. Read by hand: a regular expression capturing the rest cost 1.3 µs a request.
 */
function credentialsOf(header: string): string | null {
  const value = header.trim();
  let end = 0;
  while (end < value.length && value[end] !== ' ' && value[end] !== '\t') end++;
  const scheme = value.slice(0, end).toLowerCase();
  return scheme === 'bearer' || scheme === 'dpop' ? value.slice(end).trim() : null;
}

function has(container: unknown, key: string): boolean {
  return typeof container === 'object' && container !== null && Object.hasOwn(container, key);
}

/**
 * `passport-http-bearer`, restricted to what RFC 6750 section 2.1 allows this service to accept: the token is
 * read from the Authorization header only. Passport also reads `access_token` from the query and the body; here
 * it is handed a view of the request with the header alone, so a token sent only there is ignored (401), while
 * one sent there *and* in the header is still refused as ambiguous (400).
 *
 * Header forms, decided: the scheme is case-insensitive and may be followed by several spaces or tabs
 * (`Bearer<2 spaces>token` is accepted, as `1*SP` allows); a value with inner whitespace (`Bearer a b`) is
 * malformed, 400 invalid_request, as passport answers any header that is not exactly two parts.
 */
/** The authenticate options BearerAuthGuard passes: the verifier of the application that received the request. */
export interface BearerOptions {
  verifier?: AccessTokenVerifier;
}

/** What the strategy hands its verify callback: the header alone, and the verifier to use. */
interface BearerView {
  headers: { authorization?: string };
  verifier: AccessTokenVerifier;
}

@Injectable()
export class BearerStrategy extends PassportStrategy(Strategy, 'bearer') {
  constructor(private readonly verifier: AccessTokenVerifier) {
    super({ realm: 'api', passReqToCallback: true });
  }

  override authenticate(req: Request, options?: BearerOptions): void {
    const header = req.headers.authorization;
    const credentials = header === undefined ? null : credentialsOf(header);
    const token = credentials || undefined;
    if (token && (has(req.query, 'access_token') || has(req.body, 'access_token'))) {
      (this as unknown as { fail(status: number): void }).fail(400);
      return;
    }
    const view: BearerView = {
      headers: credentials === null ? {} : { authorization: token ? `Bearer ${token}` : 'Bearer' },
      verifier: options?.verifier ?? this.verifier,
    };
    super.authenticate(view as unknown as Request, options);
  }

  /** Passport's verify callback: the caller, or `false` for a token that is not valid here. */
  async validate(view: BearerView, token: string): Promise<AuthPrincipal | false> {
    return view.verifier.verify(token).catch(() => false as const);
  }
}
