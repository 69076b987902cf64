import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import type { AuditContext } from '../audit/audit-events';
import { AuditService } from '../audit/audit.service';
import { sql } from '../database/sql';
import { Consent } from './entities/consent.entity';

const UPSERT_CONSENT = sql`
  INSERT INTO consents (user_id, client_id, scope, updated_at) VALUES (:userId, :clientId, :scope, :now)
  ON CONFLICT (user_id, client_id) DO UPDATE SET scope = excluded.scope, updated_at = excluded.updated_at`;

/** The scopes each user has granted to each client, so that a repeated request skips the consent page. */
@Injectable()
export class ConsentService {
  constructor(
    @InjectRepository(Consent) private readonly consents: Repository<Consent>,
    private readonly audit: AuditService,
  ) {}

  async consentedScopes(userId: string, clientId: string): Promise<Set<string>> {
    const row = await this.consents.findOne({ where: { userId, clientId } });
    return new Set(row ? row.scope.split(' ').filter(Boolean) : []);
  }

  /** Adds `scope` to what the user granted the client, with its `consent.granted` event. */
  async record(userId: string, clientId: string, scope: string, context: AuditContext): Promise<void> {
    const merged = await this.consentedScopes(userId, clientId);
    for (const s of scope.split(' ')) if (s) merged.add(s);
    const by = { actor: `user:${userId}` as const, context };
    await this.audit.recorded({ type: 'consent.granted', userId, clientId, details: { scope } }, by, [
      { statement: UPSERT_CONSENT, params: { userId, clientId, scope: [...merged].join(' '), now: Date.now() } },
    ]);
  }

  /** The user said no: only the event. */
  async deny(userId: string, clientId: string, scope: string, context: AuditContext): Promise<void> {
    await this.audit.record({ type: 'consent.denied', actor: `user:${userId}`, userId, clientId, details: { scope } }, context);
  }
}
