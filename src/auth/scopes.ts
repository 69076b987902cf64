export const SCOPES = ['users:read', 'users:write', 'orders:read', 'orders:write'] as const;
export type Scope = (typeof SCOPES)[number];

export const SCOPE_DESCRIPTIONS: Record<Scope, string> = {
  'users:read': 'See user profiles (your own, or all users if you are an administrator)',
  'users:write': 'Change user profiles (your own, or all users if you are an administrator)',
  'orders:read': 'See orders',
  'orders:write': 'Place orders',
};

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}
