import { Injectable } from '@nestjs/common';
import { EventEmitter2 } from '@nestjs/event-emitter';
import type { AuditBy, AuditEventInput } from '../audit/audit-events';
import { AuditService } from '../audit/audit.service';
import { meetsAcr } from '../auth/acr';
import type { AuthPrincipal } from '../auth/principal';
import { isUniqueViolation } from '../database/database-errors';
import { DomainError } from '../common/domain-error';
import type { UpdateUserDto } from './dto/update-user.dto';
import { UserResponseDto } from './dto/user-response.dto';
import { PasswordHasher } from './password-hasher';
import { USER_PASSWORD_RESET, UserPasswordResetEvent } from './user-events';
import { MANAGED_BY_CONNECTION, OTHERS_CREDENTIALS_NEED_AAL2, OWN_CREDENTIALS_NEED_PROOF, UsersError } from './users.errors';
import { UsersRepository } from './users.repository';
import { UsersService } from './users.service';

/** How the caller showed it may replace the credentials: the person's password, or a two-factor sign-in. */
type Proof = 'current password' | 'aal2';

/**
 * `PUT /users/{id}`. A new password or email (the way into the account, through a reset) takes proof beyond a
 * users:write token — the person's current password, or a token of an aal2 sign-in; another person's, an
 * administrator's aal2 — and ends the person's sessions and grants but the caller's own. A role is an
 * administrator's to set. Each such change is audited with the write.
 */
@Injectable()
export class ProfileUpdatesService {
  constructor(
    private readonly users: UsersService,
    private readonly rows: UsersRepository,
    private readonly hasher: PasswordHasher,
    private readonly events: EventEmitter2,
    private readonly audit: AuditService,
  ) {}

  async update(principal: AuthPrincipal, userId: string, dto: UpdateUserDto, by: AuditBy): Promise<UserResponseDto> {
    const actor = await this.users.accessibleUserId(principal, userId);
    if (dto.role !== undefined && actor.role !== 'admin') {
      throw new DomainError(UsersError.RoleChangeForbidden, 'Only an administrator may set a role.');
    }
    const stored = await this.rows.credentialsById(userId);
    if (!stored) throw userNotFound();
    const newPassword = dto.password !== undefined;
    // Another letter case is the same address (and the same account key): no new way in.
    const newEmail = dto.email.toLowerCase() !== stored.emailNormalized;
    if ((newPassword || newEmail) && !UsersService.hasOwnPassword(stored)) {
      throw new DomainError(UsersError.ManagedByConnection, MANAGED_BY_CONNECTION);
    }
    const proof = newPassword || newEmail ? await this.proofOf(principal, userId, stored.passwordHash, dto.currentPassword) : undefined;
    const role = dto.role !== undefined && dto.role !== stored.role ? dto.role : null;

    const audited: Omit<AuditEventInput, 'actor'>[] = [];
    if (newPassword) audited.push({ type: 'user.password_changed', userId, details: { proof: proof! } });
    if (newEmail) audited.push({ type: 'user.email_changed', userId, details: { proof: proof! } });
    if (role) audited.push({ type: 'user.role_changed', userId, details: { from: stored.role, to: role } });
    const now = Date.now();
    const events = audited.map((input) => AuditService.event({ ...input, actor: by.actor }, by.context, now));
    const profile = {
      email: dto.email,
      name: dto.name,
      gender: dto.gender,
      age: dto.age,
      role,
      passwordHash: newPassword ? await this.hasher.hash(dto.password!) : null,
      updatedAt: now,
    };
    const checkedHash = proof === 'current password' ? stored.passwordHash : undefined;
    let changed: boolean;
    try {
      changed = await this.rows.updateProfile(userId, profile, checkedHash, events);
    } catch (error) {
      if (isUniqueViolation(error)) throw new DomainError(UsersError.EmailTaken, 'A user with this email already exists.');
      throw error;
    }
    if (!changed) throw (await this.rows.exists(userId)) ? wrongPassword() : userNotFound();
    for (const event of events) this.audit.log(event);
    if (proof) {
      const keepGrantId = principal.sub === userId ? principal.grantId : undefined;
      const via = newPassword ? 'password change' : 'email change';
      await this.events.emitAsync(USER_PASSWORD_RESET, new UserPasswordResetEvent(userId, { via, by, keepGrantId }));
    }
    const updated = await this.rows.findById(userId);
    if (!updated) throw userNotFound();
    return UserResponseDto.from(updated);
  }

  /** The caller's proof for a new password or email, or the refusal saying what would do. */
  private async proofOf(principal: AuthPrincipal, userId: string, storedHash: string, currentPassword: string | undefined): Promise<Proof> {
    if (principal.sub !== userId) {
      // An administrator does not know the person's password, and a password-only token of theirs is not enough.
      if (meetsAcr(principal.acr, 'aal2')) return 'aal2';
      throw new DomainError(UsersError.StrongerSignInRequired, OTHERS_CREDENTIALS_NEED_AAL2);
    }
    if (currentPassword !== undefined) {
      if (await this.hasher.verify(storedHash, currentPassword)) return 'current password';
      throw wrongPassword();
    }
    if (meetsAcr(principal.acr, 'aal2')) return 'aal2';
    throw new DomainError(UsersError.CurrentPasswordRequired, OWN_CREDENTIALS_NEED_PROOF);
  }
}

function userNotFound(): DomainError {
  return new DomainError(UsersError.NotFound, 'No such user.');
}

function wrongPassword(): DomainError {
  return new DomainError(UsersError.CurrentPasswordWrong, 'currentPassword is not the current password.');
}
