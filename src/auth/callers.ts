import { Injectable } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { AuthPrincipal } from './principal';
import { RoleDirectory } from './role-directory';

/**
 * What a module that keeps records per person needs to know about its caller, without depending on the users
 * module: whether they act as an administrator (their role, read now, as `@Roles()` reads it), and so which
 * owner's records their queries keep to. Exported by AuthModule.
 */
@Injectable()
export class Callers {
  private roles: RoleDirectory | undefined;

  constructor(private readonly moduleRef: ModuleRef) {}

  /** Whether the caller is a person whose current role is `admin` (a client token never is). */
  async isAdmin(caller: AuthPrincipal): Promise<boolean> {
    if (caller.kind !== 'user') return false;
    this.roles ??= this.moduleRef.get(RoleDirectory, { strict: false });
    if (!this.roles) throw new Error('Callers needs a RoleDirectory provider (the users module provides one)');
    return (await this.roles.roleOf(caller.sub)) === 'admin';
  }

  /** The owner whose records the caller's queries keep to: their own id, or `undefined` (everyone's) for an administrator. */
  async ownerScope(caller: AuthPrincipal): Promise<string | undefined> {
    return (await this.isAdmin(caller)) ? undefined : caller.sub;
  }
}
