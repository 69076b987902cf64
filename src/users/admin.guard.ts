import { type CanActivate, type ExecutionContext, Injectable, UseGuards, applyDecorators } from '@nestjs/common';
import type { RequestWithPrincipal } from '../auth/auth.decorators';
import { DomainError, DomainErrorCode } from '../common/domain-error';
import { UsersService } from './users.service';

/** Runs after the bearer guard (scopes first), before validation: a non-admin learns nothing about the body rules. */
@Injectable()
export class AdminGuard implements CanActivate {
  constructor(private readonly users: UsersService) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const principal = context.switchToHttp().getRequest<RequestWithPrincipal>().principal;
    if (!principal) throw new DomainError(DomainErrorCode.UnknownPrincipal, 'No authenticated caller.');
    const actor = await this.users.actor(principal);
    if (actor.role !== 'admin') throw new DomainError(DomainErrorCode.AdminOnly, 'This route is for administrators only.');
    return true;
  }
}

export const AdminOnly = () => applyDecorators(UseGuards(AdminGuard));
