import { type KeyObject, createPrivateKey, createPublicKey } from 'node:crypto';
import { Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { type JWK, calculateJwkThumbprint, exportJWK, generateKeyPair } from 'jose';
import type { Repository } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { withStartupLock } from '../database/startup-lock';
import { KeyEncryption, KeyEncryptionError } from './key-encryption';
import { KeysConfig } from './keys.config';
import { SigningKey } from './signing-key.entity';

interface LoadedKey {
  kid: string;
  createdAt: number;
  privateKey: KeyObject;
  publicKey: KeyObject;
  publicJwk: JWK;
}

/** How often every instance re-reads the keys, so a rotation reaches all of them within a minute. */
const RELOAD_INTERVAL_MS = 30_000;
/** An unknown `kid` triggers a reload at most this often. */
const UNKNOWN_KID_RELOAD_MS = 1_000;
export const CLOCK_SKEW_SECONDS = 30;

/** RS256 signing keys, kept in the database so that every instance signs and verifies with the same set. */
@Injectable()
export class SigningKeysService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(SigningKeysService.name);
  private keys: LoadedKey[] = [];
  private byKid = new Map<string, LoadedKey>();
  private lastReload = 0;
  private reloading: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;

  private readonly encryption: KeyEncryption;
  /** The key-encryption key being replaced (OLD_KEY_ENCRYPTION_KEY): still opens what it sealed meanwhile. */
  private readonly previous: KeyEncryption;

  constructor(
    @InjectRepository(SigningKey) private readonly repo: Repository<SigningKey>,
    private readonly config: AppConfig,
    keysConfig: KeysConfig,
  ) {
    this.encryption = new KeyEncryption(keysConfig.keyEncryptionKey);
    this.previous = new KeyEncryption(keysConfig.oldKeyEncryptionKey);
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
      // The first start on an empty database: one key, even when several instances start together (PostgreSQL:
      // they take turns under the start-up lock; SQLite: the insert is one statement that adds it only to an
      // empty table, and SQLite runs one writer at a time).
      await withStartupLock(this.repo.manager.connection, async () => {
        await this.reload();
        if (this.keys.length === 0) await this.insertIntoEmpty(await this.newKey());
        await this.reload();
      });
    }
    this.timer = setInterval(() => void this.reload().catch(() => undefined), RELOAD_INTERVAL_MS);
    this.timer.unref();
  }

  onApplicationShutdown(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /** Creates a new active key; older keys stay published until the tokens they signed have expired. */
  async rotate(): Promise<string> {
    const key = await this.newKey();
    await this.repo.insert(key);
    await this.reload();
    return key.kid;
  }

  private async newKey(): Promise<SigningKey> {
    const { privateKey, publicKey } = await generateKeyPair('RS256', { modulusLength: 2048, extractable: true });
    const publicJwk = await exportJWK(publicKey);
    const kid = await calculateJwkThumbprint(publicJwk);
    return {
      kid,
      privateJwk: this.encryption.seal(kid, JSON.stringify(await exportJWK(privateKey))),
      publicJwk: JSON.stringify({ ...publicJwk, kid, alg: 'RS256', use: 'sig' }),
      createdAt: Date.now(),
    };
  }

  /** Stores a key only if there is none yet (in the same statement). */
  private async insertIntoEmpty(key: SigningKey): Promise<void> {
    const { driver } = this.repo.manager.connection;
    const [a, b, c, d] = [0, 1, 2, 3].map((i) => driver.createParameter(`p${i}`, i));
    await this.repo.query(
      `INSERT INTO signing_keys (kid, private_jwk, public_jwk, created_at)
       SELECT ${a}, ${b}, ${c}, ${d} WHERE NOT EXISTS (SELECT 1 FROM signing_keys)`,
      [key.kid, key.privateJwk, key.publicJwk, key.createdAt],
    );
  }

  /** How many private keys are not sealed under KEY_ENCRYPTION_KEY (plain, or under the key being replaced). */
  async unsealedCount(): Promise<number> {
    const rows = await this.repo.find({ select: { kid: true, privateJwk: true } });
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
    return this.repo.manager.transaction(async (manager) => {
      const rows = await manager.find(SigningKey);
      let reencrypted = 0;
      for (const row of rows) {
        const sealedWith = KeyEncryption.sealedWith(row.privateJwk);
        if (sealedWith === current.id) continue;
        if (sealedWith !== undefined && sealedWith !== old.id) {
          throw new Error(
            `signing key ${row.kid} is sealed under a key-encryption key that is neither KEY_ENCRYPTION_KEY nor OLD_KEY_ENCRYPTION_KEY (${sealedWith})`,
          );
        }
        const plaintext = this.openPrivate(row.kid, row.privateJwk);
        await manager.update(SigningKey, { kid: row.kid }, { privateJwk: current.seal(row.kid, plaintext) });
        reencrypted++;
      }
      return { reencrypted, alreadySealed: rows.length - reencrypted, keyEncryptionKeyId: current.id! };
    });
  }

  /** The key new tokens are signed with: the newest one. */
  activeKey(): LoadedKey {
    const key = this.keys[0];
    if (!key) throw new Error('no signing key loaded');
    return key;
  }

  /** The public key for a `kid`, reloading from the database (rate-limited) when it is unknown here. */
  async verificationKey(kid: string): Promise<KeyObject | undefined> {
    const known = this.byKid.get(kid);
    if (known) return known.publicKey;
    if (Date.now() - this.lastReload >= UNKNOWN_KID_RELOAD_MS) {
      await this.reload().catch(() => undefined);
    }
    return this.byKid.get(kid)?.publicKey;
  }

  /** The JWK set: the active key and every older key whose tokens may still be unexpired. */
  jwks(): { keys: JWK[] } {
    const now = Date.now();
    const graceMs = (this.config.accessTokenTtl + CLOCK_SKEW_SECONDS) * 1000;
    const keys: JWK[] = [];
    for (let i = 0; i < this.keys.length; i++) {
      const supersededAt = i === 0 ? undefined : this.keys[i - 1].createdAt;
      if (supersededAt === undefined || supersededAt + graceMs > now) keys.push(this.keys[i].publicJwk);
    }
    return { keys };
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
      const rows = await this.repo.find({ order: { createdAt: 'DESC', kid: 'ASC' } });
      const keys = rows.map((row) => {
        const cached = this.byKid.get(row.kid);
        if (cached) return cached;
        const publicJwk = JSON.parse(row.publicJwk) as JWK;
        return {
          kid: row.kid,
          createdAt: row.createdAt,
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
