/** A scope name, such as `orders:read`. Each feature module defines its own with {@link defineScopes}. */
export type Scope = string;

const registry = new Map<Scope, { description: string; role?: string }>();

export interface ScopeDefinition {
  name: string;
  /** What the consent page and the OpenAPI document say the scope allows. */
  description: string;
  /**
   * The role a person must have for a token to carry the scope (`admin`): for anyone else `/authorize` leaves it
   * out (consent page, grant, token), token exchange refuses it, and clients do not get it by default.
   */
  role?: string;
}

/**
 * Declares a module's scopes in its own `<feature>.scopes.ts`, and returns their names for `@Access({ scopes })`:
 * `export const OrdersScope = defineScopes({ read: { name: 'orders:read', description: 'See orders' } })`, then
 * `@Access({ scopes: [OrdersScope.read], people: 'any' })`. Metadata, consent, OpenAPI, client registration, the demo and the tests all read
 * the scopes from this registry, so a new module's scopes are written in its own folder only.
 */
export function defineScopes<const T extends Record<string, ScopeDefinition>>(scopes: T): { readonly [K in keyof T]: T[K]['name'] } {
  const names: Record<string, string> = {};
  for (const [key, { name, description, role }] of Object.entries(scopes)) {
    if (!/^[\x21\x23-\x5B\x5D-\x7E]+$/.test(name)) throw new Error(`scope "${name}" has characters RFC 6749 3.3 does not allow`);
    if (registry.has(name)) throw new Error(`scope "${name}" is defined twice`);
    registry.set(name, role === undefined ? { description } : { description, role });
    names[key] = name;
  }
  return names as { readonly [K in keyof T]: T[K]['name'] };
}

/** Every scope the application's modules define, in the order they were defined. */
export function allScopes(): Scope[] {
  return [...registry.keys()];
}

/**
 * Scopes that ask the authorization server for something rather than grant access to a resource
 * (`offline_access`: a refresh token). They are in the authorization server's metadata, not the resource's.
 */
const AUTHORIZATION_SERVER_SCOPES: ReadonlySet<Scope> = new Set(['offline_access']);

/** The scopes a resource's routes can take: every defined scope but the authorization server's own (RFC 9728 2). */
export function resourceScopes(): Scope[] {
  return allScopes().filter((scope) => !AUTHORIZATION_SERVER_SCOPES.has(scope));
}

export function isScope(value: string): boolean {
  return registry.has(value);
}

/** The consent-page wording of a scope (its name when it has none). */
export function scopeDescription(name: Scope): string {
  return registry.get(name)?.description ?? name;
}

/** The role a scope is bound to, if any (see {@link ScopeDefinition.role}). */
export function scopeRole(name: Scope): string | undefined {
  return registry.get(name)?.role;
}

/** What a client is given when its registration names no scope: every scope bound to no role. */
export function defaultClientScope(): string {
  return allScopes()
    .filter((scope) => scopeRole(scope) === undefined)
    .join(' ');
}

/** Whether any of `scopes` is bound to a role. */
export function hasRoleBoundScope(scopes: readonly Scope[]): boolean {
  return scopes.some((scope) => scopeRole(scope) !== undefined);
}

/**
 * The scopes a person may hold: one bound to a role they do not have is left out. `roleOf` (the person's role, or
 * undefined when they no longer exist) is asked only when a scope is bound to a role.
 */
export async function scopesHeld(scopes: readonly Scope[], roleOf: () => Promise<string | undefined>): Promise<Scope[]> {
  if (!hasRoleBoundScope(scopes)) return [...scopes];
  const role = await roleOf();
  return scopes.filter((scope) => {
    const bound = scopeRole(scope);
    return bound === undefined || bound === role;
  });
}
