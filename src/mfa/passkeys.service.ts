import { Injectable } from '@nestjs/common';
import type {
  AuthenticationResponseJSON,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
} from '@simplewebauthn/server';
import type { AuditActor, AuditContext } from '../audit/audit-events';
import { AuditService } from '../audit/audit.service';
import { hashSecret, randomSecret } from '../crypto/secrets';
import { AppConfig } from '../config/app-config';
import type { AuthenticationMethods } from './authentication-methods';
import { MfaConfig } from './mfa.config';
import { type ChallengePurpose, type PasskeyRow, PasskeysRepository } from './passkeys.repository';

/**
 * @simplewebauthn/server, loaded at the first passkey operation: with its ASN.1 and X.509 dependencies it adds about
 * 25 MB to the process, which an instance whose people never use passkeys does not pay.
 */
const loadWebAuthn = () => import('@simplewebauthn/server');
let webauthn: ReturnType<typeof loadWebAuthn> | undefined;
const simpleWebAuthn = () => (webauthn ??= loadWebAuthn());

/** How long a browser has to answer a challenge (the authenticator's prompt included). */
const CHALLENGE_TTL_MS = 5 * 60_000;
export const CHALLENGE_TTL_SECONDS = CHALLENGE_TTL_MS / 1000;
/** 1,023 bytes (WebAuthn's limit of a credential id) in base64url. */
const MAX_CREDENTIAL_ID_CHARS = 1364;
/** A credential id as stored; anything else (a NUL, say, which PostgreSQL refuses as a parameter) names no passkey. */
const CREDENTIAL_ID = /^[A-Za-z0-9_-]{1,1364}$/;
/** The longest name a person gives a passkey. */
export const PASSKEY_NAME_MAX = 64;

/** What the account page lists of a passkey. */
export type PasskeyView = Pick<PasskeyRow, 'id' | 'name' | 'createdAt' | 'lastUsedAt' | 'deviceType' | 'backedUp'>;

/** Options for the browser's WebAuthn call, and the secret of the cookie that binds their challenge to that browser. */
export interface IssuedChallenge<Options> {
  options: Options;
  secret: string;
}

/** Why an answer was refused, as the audit trail records it. */
export type PasskeyRefusal =
  | 'no challenge'
  | 'unreadable answer'
  | 'unknown passkey'
  | 'passkey of another person'
  | 'no user handle'
  | 'not verified'
  | 'already registered';

export type PasskeySignIn =
  { ok: true; userId: string; amr: AuthenticationMethods } | { ok: false; reason: PasskeyRefusal; userId?: string };

/**
 * Passkeys (WebAuthn Level 3, verified by @simplewebauthn/server): registration from the account page, sign-in with a
 * passkey alone (a discoverable credential: the browser offers the person's passkeys, no email typed) or as the
 * second factor after the password. User verification is required everywhere, so a passkey counts as two factors
 * (`mfa`). Every challenge is stored with the hash of a cookie of the browser it was handed to, and taken by the one
 * statement that checks the answer: an answer is checked once, on any instance, and only in that browser.
 */
@Injectable()
export class PasskeysService {
  private readonly rpId: string;
  private readonly origins: string[];

  constructor(
    private readonly passkeys: PasskeysRepository,
    private readonly audit: AuditService,
    config: MfaConfig,
    app: AppConfig,
  ) {
    ({ rpId: this.rpId, origins: this.origins } = config.relyingParty(app.issuer));
  }

  list(userId: string): Promise<PasskeyView[]> {
    return this.passkeys.ofUser(userId);
  }

  async has(userId: string): Promise<boolean> {
    return (await this.passkeys.countOf(userId)) > 0;
  }

  countOf(userId: string): Promise<number> {
    return this.passkeys.countOf(userId);
  }

  /** Options to create a passkey for the person (a discoverable one; their existing passkeys excluded). */
  async registrationOptions(userId: string, label: string): Promise<IssuedChallenge<PublicKeyCredentialCreationOptionsJSON>> {
    const existing = await this.passkeys.ofUser(userId);
    const { generateRegistrationOptions } = await simpleWebAuthn();
    const options = await generateRegistrationOptions({
      rpName: this.rpId,
      rpID: this.rpId,
      userName: label,
      userID: userHandleOf(userId),
      attestationType: 'none',
      excludeCredentials: existing.map((p) => ({ id: p.id, transports: p.transports })),
      authenticatorSelection: { residentKey: 'required', userVerification: 'required' },
      timeout: CHALLENGE_TTL_MS,
    });
    return { options, secret: await this.storeChallenge(options.challenge, 'register', userId) };
  }

  /**
   * Options to sign in with a passkey: any of the person's when `userId` is given (the second factor after the
   * password), else the browser offers its own (discoverable credentials).
   */
  async authenticationOptions(userId?: string): Promise<IssuedChallenge<PublicKeyCredentialRequestOptionsJSON>> {
    const allowed = userId === undefined ? [] : await this.passkeys.ofUser(userId);
    const { generateAuthenticationOptions } = await simpleWebAuthn();
    const options = await generateAuthenticationOptions({
      rpID: this.rpId,
      allowCredentials: allowed.map((p) => ({ id: p.id, transports: p.transports })),
      userVerification: 'required',
      timeout: CHALLENGE_TTL_MS,
    });
    return {
      options,
      secret: await this.storeChallenge(options.challenge, userId === undefined ? 'sign-in' : 'second-factor', userId ?? null),
    };
  }

  /** Checks the browser's answer to a registration challenge and stores the new passkey under `name`. */
  async register(
    userId: string,
    secret: string | undefined,
    answer: unknown,
    name: string,
    context: AuditContext,
  ): Promise<{ ok: true; passkey: PasskeyView } | { ok: false; reason: PasskeyRefusal }> {
    const taken = secret ? await this.passkeys.takeChallenge(hashSecret(secret), Date.now()) : undefined;
    if (!taken || taken.purpose !== 'register' || taken.userId !== userId) return { ok: false, reason: 'no challenge' };
    const response = credentialOf<RegistrationResponseJSON>(answer, 'attestationObject');
    if (!response) return { ok: false, reason: 'unreadable answer' };
    const { verifyRegistrationResponse } = await simpleWebAuthn();
    const verified = await verifyRegistrationResponse({
      response,
      expectedChallenge: taken.challenge,
      expectedOrigin: this.origins,
      expectedRPID: this.rpId,
      requireUserVerification: true,
    }).catch(() => undefined);
    if (!verified?.verified) return { ok: false, reason: 'not verified' };
    const info = verified.registrationInfo;
    // WebAuthn caps a credential id at 1,023 bytes; the library reads up to 65,535.
    if (info.credential.id.length > MAX_CREDENTIAL_ID_CHARS) return { ok: false, reason: 'unreadable answer' };
    const passkey = {
      id: info.credential.id,
      userId,
      name: name || 'Passkey',
      publicKey: Buffer.from(info.credential.publicKey).toString('base64url'),
      signCount: info.credential.counter,
      // As the browser sent them (the library passes them on unchecked): known-looking names only.
      transports: (Array.isArray(info.credential.transports) ? (info.credential.transports as unknown[]) : [])
        .filter((t): t is string => typeof t === 'string' && /^[a-z-]{1,20}$/.test(t))
        .slice(0, 8),
      aaguid: info.aaguid,
      deviceType: info.credentialDeviceType,
      backedUp: info.credentialBackedUp,
    };
    const now = Date.now();
    if (!(await this.passkeys.insert(passkey, now))) return { ok: false, reason: 'already registered' };
    const details = { factor: 'passkey', passkey: passkey.name, synced: passkey.deviceType === 'multiDevice' };
    await this.audit.record({ type: 'factor.enrolled', actor: `user:${userId}`, userId, details }, context);
    return { ok: true, passkey: { ...passkey, createdAt: now, lastUsedAt: null } };
  }

  /**
   * Checks the browser's answer to a sign-in challenge: for `second-factor`, with a passkey of `userId` only. The
   * person it signs in and how (`amr`), or why not.
   */
  async authenticate(
    secret: string | undefined,
    answer: unknown,
    purpose: 'sign-in' | 'second-factor',
    userId?: string,
  ): Promise<PasskeySignIn> {
    const taken = secret ? await this.passkeys.takeChallenge(hashSecret(secret), Date.now()) : undefined;
    if (!taken || taken.purpose !== purpose || (purpose === 'second-factor' && taken.userId !== userId)) {
      return { ok: false, reason: 'no challenge', userId };
    }
    const response = credentialOf<AuthenticationResponseJSON>(answer, 'authenticatorData');
    if (!response) return { ok: false, reason: 'unreadable answer', userId };
    const passkey = await this.passkeys.find(response.id);
    if (!passkey) return { ok: false, reason: 'unknown passkey', userId };
    const handle = response.response.userHandle;
    // WebAuthn L3 7.2: a sign-in that named no person before the ceremony must be told whose passkey answered.
    if (userId === undefined && !handle) return { ok: false, reason: 'no user handle' };
    if ((userId !== undefined && passkey.userId !== userId) || (handle && handle !== userHandleOf(passkey.userId, 'base64url'))) {
      return { ok: false, reason: 'passkey of another person', userId: userId ?? passkey.userId };
    }
    const { verifyAuthenticationResponse } = await simpleWebAuthn();
    const verified = await verifyAuthenticationResponse({
      response,
      expectedChallenge: taken.challenge,
      expectedOrigin: this.origins,
      expectedRPID: this.rpId,
      credential: { id: passkey.id, publicKey: Buffer.from(passkey.publicKey, 'base64url'), counter: passkey.signCount },
      requireUserVerification: true,
    }).catch(() => undefined);
    if (!verified?.verified) return { ok: false, reason: 'not verified', userId: passkey.userId };
    const info = verified.authenticationInfo;
    await this.passkeys.used(passkey.id, passkey.userId, info.newCounter, info.credentialBackedUp, Date.now());
    const key = info.credentialDeviceType === 'multiDevice' ? 'swk' : 'hwk';
    return { ok: true, userId: passkey.userId, amr: purpose === 'second-factor' ? ['pwd', key, 'user', 'mfa'] : [key, 'user', 'mfa'] };
  }

  /** Renames one of the person's passkeys; false when they have none with that id. */
  async rename(userId: string, id: string, name: string): Promise<boolean> {
    return CREDENTIAL_ID.test(id) && this.passkeys.rename(id, userId, name);
  }

  /**
   * Removes one of the person's passkeys (audited): `unknown` when they have none with that id, `last` (and it
   * stays) when `keepOne` and it is their last factor, with no authenticator.
   */
  async remove(
    userId: string,
    id: string,
    actor: AuditActor,
    context: AuditContext,
    keepOne: boolean,
  ): Promise<'removed' | 'last' | 'unknown'> {
    const outcome = CREDENTIAL_ID.test(id) ? await this.passkeys.deleteUnlessLast(id, userId, keepOne) : undefined;
    if (outcome === undefined) return 'unknown';
    if (outcome === 'last') return 'last';
    await this.audit.record({ type: 'factor.removed', actor, userId, details: { factor: 'passkey', passkey: outcome.name } }, context);
    return 'removed';
  }

  /** Every passkey of the person (an operator's reset, audited); how many. */
  async removeAll(userId: string, actor: AuditActor, context: AuditContext): Promise<number> {
    const removed = await this.passkeys.deleteAllOf(userId);
    if (removed > 0)
      await this.audit.record({ type: 'factor.removed', actor, userId, details: { factor: 'passkey', count: removed } }, context);
    return removed;
  }

  private async storeChallenge(challenge: string, purpose: ChallengePurpose, userId: string | null): Promise<string> {
    const secret = randomSecret();
    await this.passkeys.insertChallenge(hashSecret(secret), challenge, purpose, userId, Date.now() + CHALLENGE_TTL_MS);
    return secret;
  }
}

/** The WebAuthn user handle of a person: their id's bytes (no email or name in it, as the specification asks). */
function userHandleOf(userId: string): Uint8Array<ArrayBuffer>;
function userHandleOf(userId: string, encoding: 'base64url'): string;
function userHandleOf(userId: string, encoding?: 'base64url'): Uint8Array<ArrayBuffer> | string {
  const bytes = new TextEncoder().encode(userId);
  return encoding ? Buffer.from(bytes).toString('base64url') : bytes;
}

/**
 * The browser's answer (a PublicKeyCredential as JSON) when it has the shape @simplewebauthn/server reads: an id,
 * the type, and the base64url fields of its response (`field` is the one that tells a registration from a sign-in).
 */
function credentialOf<T extends RegistrationResponseJSON | AuthenticationResponseJSON>(answer: unknown, field: string): T | undefined {
  if (typeof answer !== 'object' || answer === null) return undefined;
  const { id, rawId, type, response } = answer as Record<string, unknown>;
  const base64url = (v: unknown) => typeof v === 'string' && v.length > 0 && v.length <= 16_384 && /^[A-Za-z0-9_-]+$/.test(v);
  if (!base64url(id) || rawId !== id || type !== 'public-key' || typeof response !== 'object' || response === null) return undefined;
  const fields = response as Record<string, unknown>;
  if (!base64url(fields.clientDataJSON) || !base64url(fields[field])) return undefined;
  return { clientExtensionResults: {}, ...(answer as object) } as T;
}
