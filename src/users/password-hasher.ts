import { Injectable } from '@nestjs/common';
import argon2 from 'argon2';

/**
 * argon2id with the OWASP-recommended parameters (19 MiB, 2 passes, 1 lane). The work runs on libuv's thread
 * pool, off the event loop.
 */
@Injectable()
export class PasswordHasher {
  static readonly options = { type: argon2.argon2id, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const;
  private dummyHash: Promise<string> | undefined;

  hash(password: string): Promise<string> {
    return argon2.hash(password, PasswordHasher.options);
  }

  async verify(hash: string, password: string): Promise<boolean> {
    try {
      return await argon2.verify(hash, password);
    } catch {
      return false;
    }
  }

  /** Spends the same time as a real check, so an unknown email cannot be told from a wrong password. */
  async verifyNothing(password: string): Promise<false> {
    this.dummyHash ??= this.hash('not-a-real-password-0000');
    await this.verify(await this.dummyHash, password);
    return false;
  }
}
