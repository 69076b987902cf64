import { defineScopes } from '../auth/scopes';

export const UsersScope = defineScopes({
  read: { name: 'users:read', description: 'See user profiles (your own, or all users if you are an administrator)' },
  write: { name: 'users:write', description: 'Change user profiles (your own, or all users if you are an administrator)' },
});
