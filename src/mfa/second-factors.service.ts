import { Injectable } from '@nestjs/common';
import { OnEvent } from '@nestjs/event-emitter';
import { toString as qrSvg } from 'qrcode';
import type { AuditActor, AuditContext } from '../audit/audit-events';
import { AuditService } from '../audit/audit.service';
import { hashSecret, randomSecret } from '../common/crypto/secrets';
import { KeyEncryption, KeyEncryptionError } from '../keys/key-encryption';
import { KEYS_REENCRYPTING, type ResealedSecrets } from '../keys/key-events';
import { KeysConfig } from '../keys/keys.config';
import type { Role } from '../users/user.entity';
import { MfaConfig } from './mfa.config';
import { type LoginChallengeRow, SecondFactorsRepository } from './second-factors.repository';
import { matchingStep, newRecoveryCodes, newTotpSecret, normalizedRecoveryCode, totpUri } from './totp';

/** The QR code as an SVG element, medium error correction (a phone camera reads it off a screen), a thin margin. */
const QR_OPTIONS = { type: 'svg', errorCorrectionLevel: 'M', margin: 1 } as const;

/** How long a sign-in waits for its second factor, and how many codes it may try. */
const CHALLENGE_TTL_MS = 5 * 60_000;
const CHALLENGE_TRIES = 5;
/**
 * Wrong codes in a row, over every sign-in of the person, after which every code is refused for a while: someone
 * who has the password cannot guess through the million codes by starting sign-in after sign-in.
 */
const FAILURES_BEFORE_LOCK = 10;
const LOCK_MS = 15 * 60_000;

/** What a person's account page shows of their second factors. */
export interface SecondFactorStatus {
  /** `none`; `pending`: scanned perhaps, not confirmed by a first code yet; `active`: asked at every sign-in. */
  totp: 'none' | 'pending' | 'active';
  recoveryCodesLeft: number;
}

/**
 * What a second factor's check found: the factor that matched, or a refusal — `locked` while too many wrong codes
 * in a row lock the authenticator (every code refused then, the right one too).
 */
export type SecondFactorCheck = { ok: true; factor: 'totp' | 'recovery' } | { ok: false; locked: boolean };

/** An authenticator being set up: what the person scans or types into their app. */
export interface TotpEnrolment {
  secret: string;
  uri: string;
  /** The QR code of `uri`, as an SVG element rendered here (no image service sees the secret). */
  qrSvg: string;
}

/**
 * Second factors of sign-in: a TOTP authenticator (RFC 6238) per person, confirmed by a first code, and ten
 * single-use recovery codes shown once. Every code is accepted once, on any instance (the last time step used is
 * stored; a recovery code is marked used by the statement that accepts it). The secret is sealed at rest with the
 * key-encryption key of the signing keys when one is set.
 */
@Injectable()
export class SecondFactorsService {
  private readonly sealing: KeyEncryption;
  private readonly oldSealing: KeyEncryption | undefined;

  constructor(
    private readonly factors: SecondFactorsRepository,
    private readonly audit: AuditService,
    private readonly config: MfaConfig,
    keys: KeysConfig,
  ) {
    this.sealing = new KeyEncryption(keys.keyEncryptionKey);
    this.oldSealing = keys.oldKeyEncryptionKey ? new KeyEncryption(keys.oldKeyEncryptionKey) : undefined;
  }

  /** Whether people of this role must set up a second factor before they sign in (MFA_REQUIRED_ROLES). */
  requiredFor(role: Role): boolean {
    return this.config.requires(role);
  }

  /** Whether the person must give a second factor to sign in. */
  async required(userId: string): Promise<boolean> {
    const totp = await this.factors.findTotp(userId);
    return totp !== undefined && totp.confirmedAt !== null;
  }

  async status(userId: string): Promise<SecondFactorStatus> {
    const totp = await this.factors.findTotp(userId);
    return {
      totp: !totp ? 'none' : totp.confirmedAt === null ? 'pending' : 'active',
      recoveryCodesLeft: totp?.confirmedAt ? await this.factors.unusedRecoveryCodes(userId) : 0,
    };
  }

  /** A new authenticator to scan (replacing one not confirmed yet); undefined when the person has an active one. */
  async beginTotp(userId: string, label: string, issuer: string): Promise<TotpEnrolment | undefined> {
    const secret = newTotpSecret();
    if (!(await this.factors.putUnconfirmedTotp(userId, this.sealing.seal(sealedFor(userId), secret), Date.now()))) return undefined;
    const uri = totpUri(secret, label, issuer);
    return { secret, uri, qrSvg: await qrSvg(uri, QR_OPTIONS) };
  }

  /**
   * The authenticator being set up, to scan again (the same secret while it is not confirmed), or a new one;
   * undefined when the person has an active one.
   */
  async enrolment(userId: string, label: string, issuer: string): Promise<TotpEnrolment | undefined> {
    const totp = await this.factors.findTotp(userId);
    if (!totp || totp.confirmedAt !== null) return totp ? undefined : this.beginTotp(userId, label, issuer);
    const secret = this.secretOf(userId, totp.secret);
    const uri = totpUri(secret, label, issuer);
    return { secret, uri, qrSvg: await qrSvg(uri, QR_OPTIONS) };
  }

  /**
   * Confirms the pending authenticator with a code from it: the recovery codes, to be shown once (only their
   * hashes are kept). Undefined when there is no pending authenticator or the code does not match.
   */
  async confirmTotp(userId: string, code: string, context: AuditContext): Promise<string[] | undefined> {
    const totp = await this.factors.findTotp(userId);
    if (!totp || totp.confirmedAt !== null) return undefined;
    const now = Date.now();
    const step = matchingStep(this.secretOf(userId, totp.secret), code.trim(), now);
    if (step === undefined || !(await this.factors.useStep(userId, step, now, true))) return undefined;
    const codes = newRecoveryCodes();
    await this.factors.replaceRecoveryCodes(userId, codes.map(hashSecret), now);
    await this.audit.record({ type: 'factor.enrolled', actor: `user:${userId}`, userId, details: { factor: 'totp' } }, context);
    return codes;
  }

  /**
   * A sign-in's second factor: a current code of the person's authenticator, or one of their recovery codes;
   * each works once. Ten wrong codes in a row lock the authenticator for 15 minutes.
   */
  async verify(userId: string, typed: string, context: AuditContext): Promise<SecondFactorCheck> {
    const totp = await this.factors.findTotp(userId);
    if (!totp || totp.confirmedAt === null) return { ok: false, locked: false };
    const now = Date.now();
    if (totp.lockedUntil !== null && totp.lockedUntil > now) return { ok: false, locked: true };
    const step = matchingStep(this.secretOf(userId, totp.secret), typed.trim(), now);
    if (step !== undefined && (await this.factors.useStep(userId, step, now, false))) return { ok: true, factor: 'totp' };
    const recovery = normalizedRecoveryCode(typed);
    if (recovery === undefined || !(await this.factors.useRecoveryCode(userId, hashSecret(recovery), now))) {
      await this.factors.countFailure(userId, FAILURES_BEFORE_LOCK, now + LOCK_MS);
      return { ok: false, locked: false };
    }
    await this.factors.resetFailures(userId);
    const left = await this.factors.unusedRecoveryCodes(userId);
    await this.audit.record({ type: 'recovery_code.used', actor: `user:${userId}`, userId, details: { left } }, context);
    return { ok: true, factor: 'recovery' };
  }

  /** Removes the person's authenticator and recovery codes (an operator's reset); false when none. */
  async remove(userId: string, actor: AuditActor, context: AuditContext): Promise<boolean> {
    if (!(await this.factors.removeAll(userId))) return false;
    await this.removed(userId, actor, context);
    return true;
  }

  /**
   * The person's removal of their authenticator and recovery codes: with `keepOne` (their role needs a second
   * factor), only while they have a passkey, else `last` and it stays.
   */
  async removeOwn(userId: string, context: AuditContext, keepOne: boolean): Promise<'removed' | 'none' | 'last'> {
    const outcome = await this.factors.removeUnlessLast(userId, keepOne);
    if (outcome === 'removed') await this.removed(userId, `user:${userId}`, context);
    return outcome;
  }

  private async removed(userId: string, actor: AuditActor, context: AuditContext): Promise<void> {
    await this.audit.record({ type: 'factor.removed', actor, userId, details: { factor: 'totp' } }, context);
  }

  /**
   * A sign-in whose password matched, waiting for its second factor, or (`priorAmr`) a live session's step-up to a
   * stronger level: the secret of its cookie.
   */
  async startChallenge(userId: string, returnTo: string, priorAmr: string | null = null): Promise<string> {
    const secret = randomSecret();
    const now = Date.now();
    await this.factors.insertChallenge(hashSecret(secret), userId, returnTo, now, now + CHALLENGE_TTL_MS, priorAmr);
    return secret;
  }

  /** The sign-in a cookie names, counting one try; undefined when it is unknown, expired or out of tries. */
  tryChallenge(secret: string): Promise<LoginChallengeRow | undefined> {
    return this.factors.tryChallenge(hashSecret(secret), Date.now(), CHALLENGE_TRIES);
  }

  /** The sign-in a cookie names, without counting a try (to hand its passkey challenge); undefined when not live. */
  peekChallenge(secret: string): Promise<LoginChallengeRow | undefined> {
    return this.factors.peekChallenge(hashSecret(secret), Date.now(), CHALLENGE_TRIES);
  }

  async endChallenge(secret: string): Promise<void> {
    await this.factors.deleteChallenge(hashSecret(secret));
  }

  /** For the retention job: up to `batch` sign-ins that expired before `cutoff` without their code; how many. */
  deleteExpiredChallenges(cutoff: number, batch: number): Promise<number> {
    return this.factors.deleteExpiredChallenges(cutoff, batch);
  }

  /** `keys:reencrypt`: every authenticator secret sealed under KEY_ENCRYPTION_KEY (plain ones, and the old key's). */
  @OnEvent(KEYS_REENCRYPTING, { promisify: true, suppressErrors: false })
  async reseal(): Promise<ResealedSecrets> {
    if (!this.sealing.id) throw new KeyEncryptionError('KEY_ENCRYPTION_KEY is not set: there is nothing to seal the secrets with');
    let resealed = 0;
    for (const { userId, secret } of await this.factors.allTotpSecrets()) {
      if (KeyEncryption.sealedWith(secret) === this.sealing.id) continue;
      const sealed = this.sealing.seal(sealedFor(userId), this.secretOf(userId, secret));
      if (await this.factors.resealTotp(userId, secret, sealed)) resealed++;
    }
    return { totpSecrets: resealed };
  }

  private secretOf(userId: string, stored: string): string {
    const sealedWith = KeyEncryption.sealedWith(stored);
    const opener = sealedWith !== undefined && this.oldSealing?.id === sealedWith ? this.oldSealing : this.sealing;
    return opener.open(sealedFor(userId), stored);
  }
}

/** The associated data of a sealed secret: a secret copied onto another person's row does not open. */
function sealedFor(userId: string): string {
  return `totp:${userId}`;
}
