import { Injectable } from '@nestjs/common';
import type { AuditContext } from '../../audit/audit-events';
import { AuditService } from '../../audit/audit.service';
import { ConsentsRepository } from './consents.repository';

/** Two requests of the same person for the same client racing on this many reads in a row is not a real case. */
const MAX_ATTEMPTS = 5;

export function scopeList(scope: string | null | undefined): string[] {
  return (scope ?? '').split(' ').filter(Boolean);
}

/**
 * The scopes each user has granted each client: one row per person and client, so that a repeated request skips
 * the consent page, and a request for more (step-up) asks only for what is new and grows that one row.
 */
@Injectable()
export class ConsentService {
  constructor(
    private readonly consents: ConsentsRepository,
    private readonly audit: AuditService,
  ) {}

  /**
   * Adds `scope` to what the user granted the client, with its `consent.granted` event (`details.added`: the
   * scopes new to the consent). The consent only grows here. The grants (token families) issued under the
   * narrower consent before are left as they are, each with the scope it was issued with: the step-up's code starts
   * a family of its own, because the client may still be using the old one elsewhere (another device or process),
   * a refresh never widens a family, and a step-up abandoned after this point must not have cut anything off.
   * Read, then written only if unchanged, so that two approvals at once on two instances both end in the union.
   */
  async record(userId: string, clientId: string, scope: string, context: AuditContext): Promise<void> {
    const requested = scopeList(scope);
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const stored = await this.consents.scopeOf(userId, clientId);
      const previous = scopeList(stored);
      const added = requested.filter((s) => !previous.includes(s));
      const merged = [...previous, ...added].join(' ');
      const event = AuditService.event(
        { type: 'consent.granted', actor: `user:${userId}`, userId, clientId, details: { scope, added: added.join(' ') } },
        context,
      );
      if (await this.consents.replace(userId, clientId, stored, merged, event)) {
        this.audit.log(event);
        return;
      }
    }
    throw new Error('the consent kept changing while it was being recorded');
  }

  /** The user said no: only the event. What they granted before stays as it was. */
  async deny(userId: string, clientId: string, scope: string, context: AuditContext): Promise<void> {
    await this.audit.record({ type: 'consent.denied', actor: `user:${userId}`, userId, clientId, details: { scope } }, context);
  }
}
