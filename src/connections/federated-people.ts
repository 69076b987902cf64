import { TransactionHost } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import type { IDToken } from 'openid-client';
import type { AuditContext } from '../audit/audit-events';
import { AuditService } from '../audit/audit.service';
import { CONTROL_CHARACTER, EMAIL_ADDRESS } from '../common/text';
import { isUniqueViolation } from '../database/database-errors';
import type { Gender, Role } from '../users/user.entity';
import { UsersService } from '../users/users.service';
import type { Connection } from './connection.entity';
import { ConnectionsRepository } from './connections.repository';

/** Why a person a connection vouches for cannot sign in here, as the page says it. */
export class FederatedRefusal extends Error {}

function text(value: unknown, max: number): string | undefined {
  return typeof value === 'string' && value.length > 0 && value.length <= max && !CONTROL_CHARACTER.test(value) ? value : undefined;
}

/** OpenID Connect's `gender` claim as this service keeps it. */
function genderOf(claim: unknown): Gender {
  return claim === 'female' || claim === 'male' ? claim : 'other';
}

/** Whole years since OpenID Connect's `birthdate` (YYYY-MM-DD), 0 when unknown. */
function ageOf(claim: unknown, now: Date): number {
  const match = typeof claim === 'string' ? /^(\d{4})-(\d{2})-(\d{2})$/.exec(claim) : null;
  if (!match) return 0;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const age =
    now.getUTCFullYear() - year - (now.getUTCMonth() + 1 < month || (now.getUTCMonth() + 1 === month && now.getUTCDate() < day) ? 1 : 0);
  return age >= 0 && age <= 150 ? age : 0;
}

/**
 * The people connections vouch for: found by connection and upstream subject, or created at their first sign-in
 * (just in time). Never linked silently to a local account by e-mail: an address that already has an account here
 * is refused (whoever registered that address upstream would otherwise take the account over).
 */
@Injectable()
export class FederatedPeople {
  constructor(
    private readonly connections: ConnectionsRepository,
    private readonly users: UsersService,
    private readonly audit: AuditService,
    private readonly transactions: TransactionHost<TransactionalAdapterTypeOrm>,
  ) {}

  /**
   * The person the upstream's ID token names, created on first sight; at each sign-in their name, and their role
   * when the connection maps groups (a change audited). Throws FederatedRefusal.
   */
  async personFor(connection: Connection, claims: IDToken, context: AuditContext): Promise<string> {
    const subject = text(claims.sub, 255);
    if (!subject) throw new FederatedRefusal('The identity provider named nobody.');
    const role = roleOf(connection, claims.groups);
    const known = await this.connections.personOf(connection.id, subject);
    if (known) {
      await this.update(known, connection, text(claims.name, 100), role, context);
      return known;
    }
    const email = text(claims.email, 254);
    if (!email || !EMAIL_ADDRESS.test(email) || claims.email_verified !== true) {
      throw new FederatedRefusal('The identity provider did not vouch for an e-mail address.');
    }
    const domain = email.slice(email.lastIndexOf('@') + 1).toLowerCase();
    if (!connection.domains.split(' ').includes(domain)) {
      throw new FederatedRefusal(`${connection.name} does not sign in people of ${domain} here.`);
    }
    const existing = await this.users.credentials(email);
    if (existing) {
      // Someone only a connection signed in, whose connection was deleted: the domain's connection now vouches for them.
      if (UsersService.hasOwnPassword(existing) || (await this.connections.hasIdentities(existing.id))) {
        throw new FederatedRefusal('An account with this e-mail address already exists here: sign in with it instead.');
      }
      await this.relink(connection, subject, existing.id, context);
      await this.update(existing.id, connection, text(claims.name, 100), role, context);
      return existing.id;
    }
    const now = Date.now();
    const name = text(claims.name, 100) ?? email.slice(0, email.indexOf('@')).slice(0, 100);
    const person = {
      email,
      name,
      gender: genderOf(claims.gender),
      age: ageOf(claims.birthdate, new Date(now)),
      role: role ?? ('user' as const),
    };
    const created = this.transactions.withTransaction(async () => {
      const userId = await this.users.provision(person);
      await this.connections.link(connection.id, subject, userId, now);
      const details = { connection: connection.id, role: person.role };
      await this.audit.write(AuditService.event({ type: 'user.provisioned', actor: 'system', userId, details }, context, now));
      return userId;
    });
    return created.catch(async (error: unknown) => {
      // A first sign-in of the same person at the same time (another tab, another instance) created them first.
      if (!isUniqueViolation(error)) throw error;
      const linked = await this.connections.personOf(connection.id, subject);
      if (!linked) throw new FederatedRefusal('An account with this e-mail address already exists here: sign in with it instead.');
      return linked;
    });
  }

  private async relink(connection: Connection, subject: string, userId: string, context: AuditContext): Promise<void> {
    const now = Date.now();
    await this.transactions.withTransaction(async () => {
      await this.connections.link(connection.id, subject, userId, now);
      const details = { connection: connection.id };
      await this.audit.write(AuditService.event({ type: 'identity.linked', actor: 'system', userId, details }, context, now));
    });
  }

  /** A known person's name as the upstream says it now, and their role when the connection maps groups. */
  private async update(userId: string, connection: Connection, name: string | undefined, role: Role | undefined, context: AuditContext) {
    const before = await this.users.roleOf(userId);
    if (before === undefined) throw new FederatedRefusal('This account no longer exists here.');
    const changed = role !== undefined && role !== before;
    const event = changed
      ? AuditService.event(
          { type: 'user.role_changed', actor: 'system', userId, details: { from: before, to: role, connection: connection.id } },
          context,
        )
      : undefined;
    if (!name && !changed) return;
    await this.transactions.withTransaction(async () => {
      await this.users.updateFromConnection(userId, { ...(name ? { name } : {}), ...(changed ? { role } : {}) });
      if (event) await this.audit.write(event);
    });
  }
}

/** The role a connection that maps groups gives the upstream's `groups` claim; undefined when it maps none. */
function roleOf(connection: Connection, groups: unknown): Role | undefined {
  if (connection.adminGroups === null) return undefined;
  const admin = connection.adminGroups.split(' ').filter(Boolean);
  return Array.isArray(groups) && groups.some((group) => typeof group === 'string' && admin.includes(group)) ? 'admin' : 'user';
}
