import { Injectable } from '@nestjs/common';
import { OnEvent } from '@nestjs/event-emitter';
import { toString as qrSvg } from 'qrcode';
import type { AuditActor, AuditContext } from '../audit/audit-events';
import { AuditService } from '../audit/audit.service';
import { hashSecret, randomSecret } from '../crypto/secrets';
import { KEYS_REENCRYPTING, type ResealedSecrets } from '../keys/key-events';
import { KeysConfig } from '../keys/keys.config';
import type { Role } from '../users/user.entity';
import { SecretSealing } from '../keys/secret-sealing';
import { MfaConfig } from './mfa.config';
import { RecoveryCodeKey } from './recovery-code-key';
import { newRecoveryCodes, normalizedRecoveryCode, unkeyedRecoveryCodeHash } from './recovery-codes';
import { type LoginChallengeRow, SecondFactorsRepository, type TotpTries } from './second-factors.repository';
import { matchingStep, newTotpSecret, totpUri } from './totp';

/** The QR code as an SVG element, medium error correction (a phone camera reads it off a screen), a thin margin. */
const QR_OPTIONS = { type: 'svg', errorCorrectionLevel: 'M', margin: 1 } as const;

/** How long a sign-in waits for its second factor, and how many codes it may try. */
const CHALLENGE_TTL_MS = 5 * 60_000;
const CHALLENGE_TRIES = 5;
/**
 * Wrong codes in a row, over every sign-in of the person, after which the app's codes are refused for 15 minutes;
 * after five such locks in a row (50 wrong codes, half of NIST SP 800-63B's ceiling of 100) until a recovery code
 * is used. Someone who has the password cannot guess through the million codes by starting sign-in after sign-in.
 */
const TOTP_TRIES: TotpTries = { limit: 10, lockMs: 15 * 60_000, maxLocks: 5 };

/** What a person's account page shows of their second factors. */
export interface SecondFactorStatus {
  /** `none`; `pending`: scanned perhaps, not confirmed by a first code yet; `active`: asked at every sign-in. */
  totp: 'none' | 'pending' | 'active';
  recoveryCodesLeft: number;
}

/**
 * What a second factor's check found: the factor that matched, or a refusal — `locked` while too many wrong codes
 * in a row lock the authenticator (every code of the app refused then, the right one too; recovery codes still
 * work): `for-now` for 15 minutes, `for-good` until a recovery code is used (or an operator's reset).
 */
export type SecondFactorCheck = { ok: true; factor: 'totp' | 'recovery' } | { ok: false; locked: false | 'for-now' | 'for-good' };

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
  private readonly sealing: SecretSealing;

  constructor(
    private readonly factors: SecondFactorsRepository,
    private readonly audit: AuditService,
    private readonly config: MfaConfig,
    private readonly recoveryKey: RecoveryCodeKey,
    keys: KeysConfig,
  ) {
    this.sealing = new SecretSealing(keys);
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
    return enrolmentOf(secret, label, issuer);
  }

  /**
   * MFA_REQUIRED_ROLES: a new authenticator to set up in the sign-in the cookie `challenge` names, bound to that
   * sign-in alone (no other sign-in, from whoever has the password, is shown it); an unconfirmed one goes.
   */
  async beginSignInEnrolment(challenge: string, userId: string, label: string, issuer: string): Promise<TotpEnrolment> {
    const secret = newTotpSecret();
    await this.factors.bindEnrolment(hashSecret(challenge), userId, this.sealing.seal(sealedFor(userId), secret));
    return enrolmentOf(secret, label, issuer);
  }

  /** The authenticator this sign-in sets up, to scan again; undefined when it sets up none or one was confirmed meanwhile. */
  async signInEnrolment(challenge: string, userId: string, label: string, issuer: string): Promise<TotpEnrolment | undefined> {
    const sealed = await this.factors.enrolmentOf(hashSecret(challenge), userId);
    if (sealed === undefined || (await this.required(userId))) return undefined;
    return enrolmentOf(this.sealing.open(sealedFor(userId), sealed), label, issuer);
  }

  /**
   * Confirms the authenticator this sign-in sets up with a code from it (unless the person has a confirmed one by
   * now): the recovery codes, to be shown once. Undefined when the sign-in sets up none or the code does not match.
   */
  async confirmSignInEnrolment(challenge: string, userId: string, code: string, context: AuditContext): Promise<string[] | undefined> {
    const sealed = await this.factors.enrolmentOf(hashSecret(challenge), userId);
    if (sealed === undefined) return undefined;
    const now = Date.now();
    const step = matchingStep(this.sealing.open(sealedFor(userId), sealed), code.trim(), now);
    if (step === undefined || !(await this.factors.putConfirmedTotp(userId, sealed, step, now))) return undefined;
    return this.enrolled(userId, now, context);
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
    return this.enrolled(userId, now, context);
  }

  /** A confirmed authenticator's recovery codes (only their keyed hashes are kept) and its audit event. */
  private async enrolled(userId: string, now: number, context: AuditContext): Promise<string[]> {
    const codes = newRecoveryCodes();
    await this.factors.replaceRecoveryCodes(userId, await Promise.all(codes.map((code) => this.recoveryKey.hashOf(code))), now);
    await this.audit.record({ type: 'factor.enrolled', actor: `user:${userId}`, userId, details: { factor: 'totp' } }, context);
    return codes;
  }

  /**
   * A sign-in's second factor: a current code of the person's authenticator, or one of their recovery codes;
   * each works once. Each code of the app is counted before it is checked (see {@link TOTP_TRIES}); a recovery
   * code works while they are locked, and ends the lock (80 bits: guessing one needs no count).
   */
  async verify(userId: string, typed: string, context: AuditContext): Promise<SecondFactorCheck> {
    const totp = await this.factors.findTotp(userId);
    if (!totp || totp.confirmedAt === null) return { ok: false, locked: false };
    const recovery = normalizedRecoveryCode(typed);
    if (recovery !== undefined) return this.recoveryCode(userId, recovery, context);
    const code = typed.trim();
    if (!/^\d{6}$/.test(code)) return { ok: false, locked: false };
    const now = Date.now();
    if (!(await this.factors.tryTotp(userId, now, TOTP_TRIES))) {
      const locks = (await this.factors.findTotp(userId))?.locks ?? 0;
      return { ok: false, locked: locks >= TOTP_TRIES.maxLocks ? 'for-good' : 'for-now' };
    }
    const step = matchingStep(this.secretOf(userId, totp.secret), code, now);
    if (step !== undefined && (await this.factors.useStep(userId, step, now, false))) return { ok: true, factor: 'totp' };
    return { ok: false, locked: false };
  }

  private async recoveryCode(userId: string, code: string, context: AuditContext): Promise<SecondFactorCheck> {
    const hash = await this.recoveryKey.hashOf(code);
    if (!(await this.factors.useRecoveryCode(userId, hash, unkeyedRecoveryCodeHash(code), Date.now()))) return { ok: false, locked: false };
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

  /** `keys:reencrypt`: every authenticator secret sealed under KEY_ENCRYPTION_KEY (plain ones, and the old key's). */
  @OnEvent(KEYS_REENCRYPTING, { promisify: true, suppressErrors: false })
  async reseal(): Promise<ResealedSecrets> {
    let resealed = 0;
    for (const { userId, secret } of await this.factors.allTotpSecrets()) {
      if (!this.sealing.needsResealing(secret)) continue;
      const sealed = this.sealing.seal(sealedFor(userId), this.secretOf(userId, secret));
      if (await this.factors.resealTotp(userId, secret, sealed)) resealed++;
    }
    return { totpSecrets: resealed };
  }

  private secretOf(userId: string, stored: string): string {
    return this.sealing.open(sealedFor(userId), stored);
  }
}

async function enrolmentOf(secret: string, label: string, issuer: string): Promise<TotpEnrolment> {
  const uri = totpUri(secret, label, issuer);
  return { secret, uri, qrSvg: await qrSvg(uri, QR_OPTIONS) };
}

/** The associated data of a sealed secret: a secret copied onto another person's row does not open. */
function sealedFor(userId: string): string {
  return `totp:${userId}`;
}
