import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import { Consent } from './entities/consent.entity';

/** The scopes each user has granted to each client, so that a repeated request skips the consent page. */
@Injectable()
export class ConsentService {
  constructor(@InjectRepository(Consent) private readonly consents: Repository<Consent>) {}

  async consentedScopes(userId: string, clientId: string): Promise<Set<string>> {
    const row = await this.consents.findOne({ where: { userId, clientId } });
    return new Set(row ? row.scope.split(' ').filter(Boolean) : []);
  }

  async record(userId: string, clientId: string, scope: string): Promise<void> {
    const merged = await this.consentedScopes(userId, clientId);
    for (const s of scope.split(' ')) if (s) merged.add(s);
    await this.consents.upsert({ userId, clientId, scope: [...merged].join(' '), updatedAt: Date.now() }, ['userId', 'clientId']);
  }

  /** Forgets what the user granted the client, so that its next authorization request asks again. */
  async withdraw(userId: string, clientId: string): Promise<boolean> {
    const { affected } = await this.consents.delete({ userId, clientId });
    return Boolean(affected);
  }
}
