import { availableParallelism } from 'node:os';
import { Injectable } from '@nestjs/common';
import argon2 from 'argon2';

/**
 * How many argon2id computations run at once: one per core this process may run on (at most 4, libuv's pool).
 * Each takes 12 MiB and a core for its duration; more at once only queue inside libuv's pool while holding
 * their memory, so they wait here instead.
 */
const MAX_CONCURRENT_HASHES = Math.min(4, Math.max(1, availableParallelism()));

/**
 * argon2id with one of OWASP's equivalent parameter sets (12 MiB, 3 passes, 1 lane: the same work as 19 MiB and 2
 * passes, in less memory per sign-in). The work runs on libuv's thread pool, off the event loop, at most
 * {@link MAX_CONCURRENT_HASHES} at a time. Hashes made with other parameters still verify, and are replaced at the
 * next sign-in (see {@link needsRehash}).
 */
@Injectable()
export class PasswordHasher {
  static readonly options = { type: argon2.argon2id, memoryCost: 12_288, timeCost: 3, parallelism: 1 } as const;
  private dummyHash: Promise<string> | undefined;
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  hash(password: string): Promise<string> {
    return this.limited(() => argon2.hash(password, PasswordHasher.options));
  }

  async verify(hash: string, password: string): Promise<boolean> {
    try {
      return await this.limited(() => argon2.verify(hash, password));
    } catch {
      return false;
    }
  }

  /** Whether `hash` was made with other parameters than today's (or is not one of ours), so is to be replaced. */
  needsRehash(hash: string): boolean {
    try {
      return !hash.startsWith('$argon2id$') || argon2.needsRehash(hash, PasswordHasher.options);
    } catch {
      return true;
    }
  }

  /** Spends the same time as a real check, so an unknown email cannot be told from a wrong password. */
  async verifyNothing(password: string): Promise<false> {
    this.dummyHash ??= this.hash('not-a-real-password-0000');
    await this.verify(await this.dummyHash, password);
    return false;
  }

  private async limited<T>(work: () => Promise<T>): Promise<T> {
    if (this.running >= MAX_CONCURRENT_HASHES) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.running++;
    try {
      return await work();
    } finally {
      // Hand the slot straight to the next caller, or free it.
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}
