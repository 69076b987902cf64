import { Injectable } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { AuthPrincipal } from './principal';
import { RoleDirectory } from './role-directory';

/**
 * A caller's role, read now from the users module's RoleDirectory (found application-wide, so auth does not depend
 * on users; a demotion applies at once): for the bearer guard's role check, and for a module that keeps
 * records per person, whether its caller is an administrator and so which owner's records their queries keep to.
 * Exported by AuthModule.
 */
@Injectable()
export class Callers {
  private roles: RoleDirectory | undefined;

  constructor(private readonly moduleRef: ModuleRef) {}

  /** The current role of a user, or `undefined` when that user no longer exists. */
  roleOf(userId: string): Promise<string | undefined> {
    this.roles ??= this.moduleRef.get(RoleDirectory, { strict: false });
    if (!this.roles) throw new Error('roles need a RoleDirectory provider (the users module provides one)');
    return this.roles.roleOf(userId);
  }

  /** Whether the caller is a person whose current role is `admin` (a client token never is). */
  async isAdmin(caller: AuthPrincipal): Promise<boolean> {
    return caller.kind === 'user' && (await this.roleOf(caller.sub)) === 'admin';
  }

  /** The owner whose records the caller's queries keep to: their own id, or `undefined` (everyone's) for an administrator. */
  async ownerScope(caller: AuthPrincipal): Promise<string | undefined> {
    return (await this.isAdmin(caller)) ? undefined : caller.sub;
  }
}
