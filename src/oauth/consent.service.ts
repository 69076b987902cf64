import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import type { AuditContext } from '../audit/audit-events';
import { AuditService } from '../audit/audit.service';
import { Consent } from './entities/consent.entity';

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
    const event = AuditService.event({ type: 'consent.granted', actor: `user:${userId}`, userId, clientId, details: { scope } }, context);
    await this.consents.manager.transaction(async (manager) => {
      const consents = manager.getRepository(Consent);
      const row = await consents.findOne({ where: { userId, clientId } });
      const merged = new Set([...(row?.scope.split(' ') ?? []), ...scope.split(' ')].filter(Boolean));
      await consents.upsert({ userId, clientId, scope: [...merged].join(' '), updatedAt: event.at }, ['userId', 'clientId']);
      await this.audit.save(event, manager);
    });
    this.audit.log(event);
  }

  /** The user said no: only the event. */
  async deny(userId: string, clientId: string, scope: string, context: AuditContext): Promise<void> {
    await this.audit.record({ type: 'consent.denied', actor: `user:${userId}`, userId, clientId, details: { scope } }, context);
  }

  /** Forgets what the user granted the client, so that its next authorization request asks again. */
  async withdraw(userId: string, clientId: string): Promise<boolean> {
    const { affected } = await this.consents.delete({ userId, clientId });
    return Boolean(affected);
  }
}
