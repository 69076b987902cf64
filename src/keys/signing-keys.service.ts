import { type KeyObject, createPrivateKey, createPublicKey } from 'node:crypto';
import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { type JWK, calculateJwkThumbprint, exportJWK, generateKeyPair } from 'jose';
import { AuditService } from '../audit/audit.service';
import type { AuditEvent } from '../audit/audit-event.entity';
import { NO_REQUEST } from '../audit/audit-events';
import { KEY_CLOCK, type KeyClock } from './key-clock';
import { KeyEncryption, KeyEncryptionError } from './key-encryption';
import { type KeyAction, type KeyTimeline, phaseAt, planEmergencyRotation, planScheduledRotation, signingKeyAt } from './key-lifecycle';
import { KeysConfig, type RotationSchedule } from './keys.config';
import { type MadeKey, SigningKeysRepository } from './signing-keys.repository';

export { CLOCK_SKEW_SECONDS } from './keys.config';

interface LoadedKey extends KeyTimeline {
  createdAt: number;
  privateKey: KeyObject;
  publicKey: KeyObject;
  publicJwk: JWK;
}

/** How often every instance re-reads the keys, so a rotation reaches all of them within a minute. */
const RELOAD_INTERVAL_MS = 30_000;
/** The re-read's name in the scheduler's registry. */
export const SIGNING_KEYS_REFRESH = 'signing-keys.refresh';
/** An unknown `kid` triggers a reload at most this often. */
const UNKNOWN_KID_RELOAD_MS = 1_000;
/** Stands for the kid of a key not made yet, when planning only to learn whether one is needed. */
const NOT_MADE_YET = '';

/**
 * RS256 signing keys, kept in the database so that every instance signs and verifies with the same set. Each
 * instance caches the whole set with its timestamps and decides at each use, on {@link KEY_CLOCK}'s time, which
 * key signs and which are published: a key planned to activate at an instant signs on every instance from then.
 */
@Injectable()
export class SigningKeysService implements OnModuleInit {
  private readonly logger = new Logger(SigningKeysService.name);
  private keys: LoadedKey[] = [];
  private byKid = new Map<string, LoadedKey>();
  private lastReload = 0;
  private reloading: Promise<void> | undefined;

  private readonly encryption: KeyEncryption;
  /** The key-encryption key being replaced (OLD_KEY_ENCRYPTION_KEY): still opens what it sealed meanwhile. */
  private readonly previous: KeyEncryption;
  private readonly schedule: RotationSchedule;

  constructor(
    private readonly repo: SigningKeysRepository,
    keysConfig: KeysConfig,
    @Inject(KEY_CLOCK) private readonly clock: KeyClock,
    private readonly audit: AuditService,
    private readonly scheduler: SchedulerRegistry,
  ) {
    this.encryption = new KeyEncryption(keysConfig.keyEncryptionKey);
    this.previous = new KeyEncryption(keysConfig.oldKeyEncryptionKey);
    this.schedule = keysConfig.schedule;
  }

  /** A stored private key's JWK: opened with KEY_ENCRYPTION_KEY, or OLD_KEY_ENCRYPTION_KEY for what it sealed. */
  private openPrivate(kid: string, stored: string): string {
    const sealedWith = KeyEncryption.sealedWith(stored);
    const opener = sealedWith !== undefined && sealedWith === this.previous.id ? this.previous : this.encryption;
    return opener.open(kid, stored);
  }

  async onModuleInit(): Promise<void> {
    await this.reload();
    if (this.keys.length === 0) {
      // The first start on an empty database: one key, even when several instances start together (they take
      // turns under the keys' lock, and the later ones find the first one's key).
      const made = await this.newKey(this.clock.now());
      await this.change(
        (keys) =>
          keys.length
            ? []
            : [
                { type: 'publish', kid: made.kid, activatesAt: made.createdAt },
                { type: 'activate', kid: made.kid },
              ],
        made,
      );
      await this.reload();
    }
    // Not keeping the process alive; the scheduler clears it when the application shuts down.
    const every = setInterval(() => void this.reload().catch(() => undefined), RELOAD_INTERVAL_MS).unref();
    this.scheduler.addInterval(SIGNING_KEYS_REFRESH, every);
  }

  /**
   * Emergency rotation (`keys:rotate`): a new key signs at once (on every instance within a minute), the key that
   * signed until now retires at once and stays published KEY_RETIREMENT_DAYS for the tokens it signed, and a
   * successor the schedule published but not activated yet is withdrawn. The schedule goes on from the new key.
   */
  async rotate(): Promise<string> {
    const now = this.clock.now();
    const made = await this.newKey(now);
    await this.change((keys, at) => planEmergencyRotation(keys, at, this.schedule, made.kid), made);
    await this.reload();
    return made.kid;
  }

  /**
   * The scheduled check (run by the KeyRotationScheduler): records what time has brought (keys activated,
   * retired, past their publication) and publishes the next key when one is due. Instances that run it at the
   * same time change the keys once: each decides again, under the keys' lock, on what it reads there. Returns what
   * this instance changed.
   */
  async checkRotation(): Promise<KeyAction[]> {
    const now = this.clock.now();
    const rows = await this.repo.timelines();
    const planned = planScheduledRotation(rows, now, this.schedule, NOT_MADE_YET);
    if (planned.length === 0) return [];
    // Making a key takes a while: outside the lock, and only when one looks due.
    const made = planned.some((action) => action.type === 'publish') ? await this.newKey(now) : undefined;
    const done = await this.change(
      (keys, at) =>
        planScheduledRotation(keys, at, this.schedule, made?.kid ?? NOT_MADE_YET).filter(
          // A key found due only under the lock (the keys changed meanwhile) waits for the next check.
          (action) => made !== undefined || (action.type !== 'publish' && action.type !== 'schedule-retirement'),
        ),
      made,
    );
    await this.reload();
    return done;
  }

  /**
   * Decides on the stored keys under the keys' lock, at the time read there (making a key outside it takes a
   * while), makes the changes decided with their audit events, and reports them.
   */
  private async change(plan: (keys: KeyTimeline[], now: number) => KeyAction[], made?: MadeKey): Promise<KeyAction[]> {
    let events: AuditEvent[] = [];
    const actions = await this.repo.change((keys) => {
      const now = this.clock.now();
      const decided = plan(keys, now);
      // Each change is a `key.rotated` audit event, written with it.
      events = decided.map((action) =>
        AuditService.event({ type: 'key.rotated', actor: 'system', details: { change: action.type, kid: action.kid } }, NO_REQUEST, now),
      );
      return { actions: decided, events };
    }, made);
    this.reportKeyChanges(actions);
    for (const event of events) this.audit.log(event);
    return actions;
  }

  /**
   * The one place where changes to the signing keys are reported — a key published, activated (the rotation
   * proper), retired, removed from the JWKS — once each, by the instance that made them: a structured log line
   * each, without key material. An audit trail of key rotations hooks in here.
   */
  private reportKeyChanges(actions: readonly KeyAction[]): void {
    const at = (ms: number) => new Date(ms).toISOString();
    for (const action of actions) {
      switch (action.type) {
        case 'publish':
          this.logger.log(
            { event: 'signing_key.published', kid: action.kid, activatesAt: at(action.activatesAt) },
            'signing key published',
          );
          break;
        case 'schedule-retirement':
          this.logger.log(
            {
              event: 'signing_key.retirement_scheduled',
              kid: action.kid,
              retiresAt: at(action.retiresAt),
              unpublishesAt: at(action.unpublishesAt),
            },
            'signing key retirement scheduled',
          );
          break;
        case 'activate':
          this.logger.log({ event: 'signing_key.activated', kid: action.kid }, 'signing key activated: new tokens are signed with it');
          break;
        case 'retire':
          this.logger.log({ event: 'signing_key.retired', kid: action.kid }, 'signing key retired: it no longer signs and stays published');
          break;
        case 'remove':
          this.logger.log({ event: 'signing_key.removed', kid: action.kid }, 'signing key removed from the JWKS');
          break;
      }
    }
  }

  private async newKey(createdAt: number): Promise<MadeKey> {
    const { privateKey, publicKey } = await generateKeyPair('RS256', { modulusLength: 2048, extractable: true });
    const publicJwk = await exportJWK(publicKey);
    const kid = await calculateJwkThumbprint(publicJwk);
    return {
      kid,
      privateJwk: this.encryption.seal(kid, JSON.stringify(await exportJWK(privateKey))),
      publicJwk: JSON.stringify({ ...publicJwk, kid, alg: 'RS256', use: 'sig' }),
      createdAt,
    };
  }

  /** How many private keys are not sealed under KEY_ENCRYPTION_KEY (plain, or under the key being replaced). */
  async unsealedCount(): Promise<number> {
    const rows = await this.repo.sealedPrivateKeys();
    return rows.filter((row) => KeyEncryption.sealedWith(row.privateJwk) !== this.encryption.id).length;
  }

  /**
   * Seals every private key under KEY_ENCRYPTION_KEY: plain ones, and ones sealed under OLD_KEY_ENCRYPTION_KEY (the
   * key being replaced), in one transaction. Keys already sealed under the current key are left as they are.
   */
  async reencrypt(): Promise<{ reencrypted: number; alreadySealed: number; keyEncryptionKeyId: string }> {
    const current = this.encryption;
    if (!current.id) throw new KeyEncryptionError('KEY_ENCRYPTION_KEY is not set: there is nothing to seal the keys with');
    const old = this.previous;
    const { resealed, total } = await this.repo.resealAll((kid, privateJwk) => {
      const sealedWith = KeyEncryption.sealedWith(privateJwk);
      if (sealedWith === current.id) return undefined;
      if (sealedWith !== undefined && sealedWith !== old.id) {
        throw new Error(
          `signing key ${kid} is sealed under a key-encryption key that is neither KEY_ENCRYPTION_KEY nor OLD_KEY_ENCRYPTION_KEY (${sealedWith})`,
        );
      }
      return current.seal(kid, this.openPrivate(kid, privateJwk));
    });
    return { reencrypted: resealed, alreadySealed: total - resealed, keyEncryptionKeyId: current.id };
  }

  /** The key new tokens are signed with now: of the keys still published, the one activated last. */
  activeKey(): LoadedKey {
    const key = signingKeyAt(this.keys, this.clock.now());
    if (!key) throw new Error('no signing key is active');
    return key;
  }

  /** The private key of a loaded `kid` (the one {@link activeKey} just named, for the signer), or undefined. */
  privateKeyOf(kid: string): KeyObject | undefined {
    return this.byKid.get(kid)?.privateKey;
  }

  /** Whether a key is in the JWKS now, so that the tokens it signed are accepted. */
  isPublished(kid: string): boolean {
    const key = this.byKid.get(kid);
    return key !== undefined && phaseAt(key, this.clock.now()) !== 'removed';
  }

  /** The public key of a published `kid`, reloading from the database (rate-limited) when it is unknown here. */
  async verificationKey(kid: string): Promise<KeyObject | undefined> {
    if (!this.byKid.has(kid) && Date.now() - this.lastReload >= UNKNOWN_KID_RELOAD_MS) {
      await this.reload().catch(() => undefined);
    }
    return this.isPublished(kid) ? this.byKid.get(kid)?.publicKey : undefined;
  }

  /** The JWK set: keys published ahead of their activation, the active one, and retired ones until they leave. */
  jwks(): { keys: JWK[] } {
    const now = this.clock.now();
    return { keys: this.keys.filter((key) => phaseAt(key, now) !== 'removed').map((key) => key.publicJwk) };
  }

  reload(): Promise<void> {
    this.reloading ??= this.load().finally(() => {
      this.reloading = undefined;
    });
    return this.reloading;
  }

  private async load(): Promise<void> {
    this.lastReload = Date.now();
    try {
      const rows = await this.repo.all();
      const keys = rows.map((row): LoadedKey => {
        const times = { activatesAt: row.activatesAt, retiresAt: row.retiresAt, unpublishesAt: row.unpublishesAt, state: row.state };
        const cached = this.byKid.get(row.kid);
        if (cached) return { ...cached, ...times };
        const publicJwk = JSON.parse(row.publicJwk) as JWK;
        return {
          kid: row.kid,
          createdAt: row.createdAt,
          ...times,
          privateKey: createPrivateKey({ key: JSON.parse(this.openPrivate(row.kid, row.privateJwk)), format: 'jwk' }),
          publicKey: createPublicKey({ key: publicJwk as Parameters<typeof createPublicKey>[0] & object, format: 'jwk' } as never),
          publicJwk,
        };
      });
      this.keys = keys;
      this.byKid = new Map(keys.map((k) => [k.kid, k]));
    } catch (error) {
      this.logger.warn(`could not reload signing keys: ${(error as Error).message}`);
      if (this.keys.length === 0) throw error;
    }
  }
}
