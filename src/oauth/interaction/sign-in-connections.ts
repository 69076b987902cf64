import type { ModuleRef } from '@nestjs/core';

/** A way to sign in through a company identity provider, as the login page offers it. */
export interface SignInLink {
  name: string;
  href: string;
}

/**
 * The company sign-in the login form routes to. The authorization server knows no connection: the module that
 * manages them provides one under {@link SIGN_IN_CONNECTIONS}. Without a provider, the form signs in local accounts.
 */
export interface SignInConnections {
  /** Where the sign-in of an address goes when a connection serves its domain (its people have no password here). */
  routeFor(email: string, returnTo: string): Promise<string | undefined>;
  /** The login page's "Sign in with …" links. */
  links(returnTo: string): Promise<SignInLink[]>;
}

/** The provider token of the application's {@link SignInConnections}; at most one module provides it. */
export const SIGN_IN_CONNECTIONS = Symbol('SIGN_IN_CONNECTIONS');

const NONE: SignInConnections = { routeFor: () => Promise.resolve(undefined), links: () => Promise.resolve([]) };

/** The application's SignInConnections, looked up once in any module (none: local accounts only). */
export function signInConnectionsOf(moduleRef: ModuleRef): SignInConnections {
  try {
    return moduleRef.get<SignInConnections>(SIGN_IN_CONNECTIONS, { strict: false });
  } catch {
    return NONE;
  }
}
