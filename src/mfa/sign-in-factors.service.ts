import { Injectable } from '@nestjs/common';
import { EventEmitter2 } from '@nestjs/event-emitter';
import type { AuditBy } from '../audit/audit-events';
import { SIGN_IN_FACTOR_REMOVED, SignInFactorRemovedEvent } from './factor-events';
import { PasskeysService } from './passkeys.service';
import { SecondFactorsService } from './second-factors.service';
import type { FactorsResetResponseDto, SignInFactorsResponseDto } from './dto/sign-in-factors.dto';
import { PasskeyResponseDto } from './dto/sign-in-factors.dto';

/**
 * All of a person's sign-in factors at once, for operators (the admin API and `user:reset-factors`): what they
 * have, and the reset of everything when they lost it (they sign in with their password alone, and set up new
 * factors; a role that needs one is led to it at sign-in).
 */
@Injectable()
export class SignInFactorsService {
  constructor(
    private readonly secondFactors: SecondFactorsService,
    private readonly passkeys: PasskeysService,
    private readonly events: EventEmitter2,
  ) {}

  async overview(userId: string): Promise<SignInFactorsResponseDto> {
    const [status, passkeys] = await Promise.all([this.secondFactors.status(userId), this.passkeys.list(userId)]);
    return { userId, ...status, passkeys: passkeys.map((p) => PasskeyResponseDto.from(p)) };
  }

  /**
   * Removes the authenticator, recovery codes and passkeys of the person, each removal audited as `by`; when any
   * went, every session and grant of theirs ends too.
   */
  async resetAll(userId: string, by: AuditBy): Promise<FactorsResetResponseDto> {
    const totp = await this.secondFactors.remove(userId, by.actor, by.context);
    const passkeys = await this.passkeys.removeAll(userId, by.actor, by.context);
    if (totp || passkeys > 0) await this.removed(userId, by);
    return { userId, removed: { totp, passkeys } };
  }

  /** After a factor of the person went: their sessions (but `keptSession`) end and their grants are revoked. */
  async removed(userId: string, by: AuditBy, keptSession?: string): Promise<void> {
    await this.events.emitAsync(SIGN_IN_FACTOR_REMOVED, new SignInFactorRemovedEvent(userId, by, keptSession));
  }
}
