import { randomInt } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { AuditService } from '../../audit/audit.service';
import { type Acr, acrOfStored, meetsAcr } from '../../auth/acr';
import type { AuditContext } from '../../audit/audit-events';
import type { AuditEvent } from '../../audit/audit-event.entity';
import { type Scope, scopeDescription, scopesHeld } from '../../auth/scopes';
import { hashSecret, randomSecret } from '../../crypto/secrets';
import { isUniqueViolation } from '../../database/database-errors';
import { uuidV7 } from '../../common/uuid-v7';
import { AppConfig } from '../../config/app-config';
import { epochMs } from '../../database/sql';
import { UsersService } from '../../users/users.service';
import type { Client } from '../entities/client.entity';
import { DEVICE_CODE_GRANT } from '../entities/client.entity';
import { OAuthConfig } from '../oauth.config';
import { OAuthError } from '../oauth-error';
import { OIDC_SCOPES } from '../oidc/oidc.scopes';
import { ResourceIndicators } from '../resource-indicators';
import { ClientsService } from '../clients/clients.service';
import type { CurrentSession } from '../interaction/sessions.service';
import { GrantsRepository } from '../grants/grants.repository';
import { type DpopBinding, TokenIssuer, type TokenResponse } from '../grants/token-issuer.service';
import { type DeviceAuthorizationRow, DeviceAuthorizationsRepository } from './device-authorizations.repository';

/**
 * User codes: eight letters of an alphabet without vowels (no words) and without letters read as digits, shown as
 * `BCDF-GHJK`: 20^8 (about 34 bits) against a rate-limited guesser.
 */
const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';
const USER_CODE_LENGTH = 8;
/** How long a request waits for the person (seconds), and the polling interval it starts with (RFC 8628 3.2). */
export const DEVICE_CODE_TTL_S = 600;
export const DEVICE_POLL_INTERVAL_S = 5;
/** A poll this much early is still in time (a client's timer and the network). */
const POLL_SLACK_MS = 500;

/** RFC 8628 3.2: the device authorization response. */
export interface DeviceAuthorizationResponse {
  device_code: string;
  user_code: string;
  verification_uri: string;
  verification_uri_complete: string;
  expires_in: number;
  interval: number;
}

/** What the person approving a request sees: the client and what it asks for. */
export interface DeviceRequestView {
  clientId: string;
  clientName: string;
  userCode: string;
  scopes: { name: string; description: string }[];
}

/** A sign-in weaker than the client's `minimum_acr`: the person steps up to `stepUp` first, then comes back to the code. */
export interface DeviceStepUp {
  stepUp: Acr;
  userCode: string;
}

/** A user code as typed: capitals, without the dash, spaces or anything outside the alphabet; undefined if not one. */
export function normalizedUserCode(typed: unknown): string | undefined {
  if (typeof typed !== 'string' || typed.length > 64) return undefined;
  const code = typed.toUpperCase().replace(/[^A-Z]/g, '');
  if (code.length !== USER_CODE_LENGTH || [...code].some((c) => !USER_CODE_ALPHABET.includes(c))) return undefined;
  return code;
}

/** A normalised user code as people read it: `BCDF-GHJK`. */
export function displayedUserCode(code: string): string {
  return `${code.slice(0, 4)}-${code.slice(4)}`;
}

function newUserCode(): string {
  let code = '';
  for (let i = 0; i < USER_CODE_LENGTH; i++) code += USER_CODE_ALPHABET[randomInt(USER_CODE_ALPHABET.length)];
  return code;
}

/**
 * The device authorization grant (RFC 8628): a device without a browser (a CLI, a container, a TV) asks for a
 * device code and a user code; the person enters the user code at `/device`, signed in, and allows or denies; the
 * device polls the token endpoint meanwhile. Codes are stored as hashes; an approval starts a grant like a code
 * does, so refresh, revocation and the connected-apps page treat it as any other.
 */
@Injectable()
export class DeviceAuthorizationService {
  constructor(
    private readonly requests: DeviceAuthorizationsRepository,
    private readonly grants: GrantsRepository,
    private readonly issuer: TokenIssuer,
    private readonly resources: ResourceIndicators,
    private readonly users: UsersService,
    private readonly audit: AuditService,
    private readonly app: AppConfig,
    private readonly config: OAuthConfig,
    private readonly clients: ClientsService,
  ) {}

  /** RFC 8628 3.1: a new request of `client` for `scope` (its registered scopes, less OpenID's, when omitted). */
  async start(client: Client, rawScope: string | undefined, rawResource: string | undefined, context: AuditContext) {
    if (!client.grantTypes.includes(DEVICE_CODE_GRANT)) {
      throw new OAuthError('unauthorized_client', `This client is not allowed the ${DEVICE_CODE_GRANT} grant.`);
    }
    const scope = requestedScope(client, rawScope);
    const resources = this.resources.atTokenEndpoint(client, rawResource);
    const now = Date.now();
    const event = AuditService.event(
      { type: 'device.requested', actor: `client:${client.id}`, clientId: client.id, details: { scope } },
      context,
      now,
    );
    const { deviceCode, userCode } = await this.stored(
      (codes) => ({
        id: hashSecret(codes.deviceCode),
        userCodeHash: hashSecret(codes.userCode),
        clientId: client.id,
        scope,
        resources: ResourceIndicators.stored(resources),
        intervalSeconds: DEVICE_POLL_INTERVAL_S,
        now,
        expiresAt: now + DEVICE_CODE_TTL_S * 1000,
      }),
      event,
    );
    this.audit.log(event);
    const shown = displayedUserCode(userCode);
    const verificationUri = `${this.app.issuer}/device`;
    return {
      device_code: deviceCode,
      user_code: shown,
      verification_uri: verificationUri,
      verification_uri_complete: `${verificationUri}?user_code=${shown}`,
      expires_in: DEVICE_CODE_TTL_S,
      interval: DEVICE_POLL_INTERVAL_S,
    } satisfies DeviceAuthorizationResponse;
  }

  /**
   * The pending request of a typed user code, as the person is asked about it (its scopes those their role lets
   * them grant), or the step-up its client's minimum level needs first; undefined when there is none (unknown,
   * expired, answered already).
   */
  async pending(typed: unknown, session: CurrentSession): Promise<DeviceRequestView | DeviceStepUp | undefined> {
    const userId = session.userId;
    const code = normalizedUserCode(typed);
    if (code === undefined) return undefined;
    const row = await this.requests.byUserCode(hashSecret(code), Date.now());
    if (!row || row.status !== 'pending') return undefined;
    const client = await this.clients.find(row.client_id);
    if (!client) return undefined;
    const stepUp = levelShort(client, session);
    if (stepUp !== null) return { stepUp, userCode: displayedUserCode(code) };
    const held = await scopesHeld(row.scope.split(' ') as Scope[], () => this.users.roleOf(userId));
    return {
      clientId: row.client_id,
      clientName: client.name,
      userCode: displayedUserCode(code),
      scopes: held.map((name) => ({ name, description: scopeDescription(name) })),
    };
  }

  /**
   * The person's answer to the request of a user code: approval starts the grant (with the session's login, for
   * ID tokens and `acr`) once the sign-in reaches the client's minimum level (else the step-up it needs), denial
   * ends the request. False when it was no longer pending.
   */
  async answer(typed: unknown, allow: boolean, session: CurrentSession, context: AuditContext): Promise<boolean | DeviceStepUp> {
    const code = normalizedUserCode(typed);
    if (code === undefined) return false;
    const userCodeHash = hashSecret(code);
    const now = Date.now();
    const row = await this.requests.byUserCode(userCodeHash, now);
    if (!row || row.status !== 'pending') return false;
    const base = { actor: `user:${session.userId}`, userId: session.userId, clientId: row.client_id } as const;
    if (!allow) {
      const event = AuditService.event({ type: 'device.denied', ...base }, context, now);
      const denied = await this.requests.deny(userCodeHash, session.userId, now, event);
      if (denied) this.audit.log(event);
      return denied;
    }
    const client = await this.clients.find(row.client_id);
    if (!client) return false;
    const stepUp = levelShort(client, session);
    if (stepUp !== null) return { stepUp, userCode: displayedUserCode(code) };
    // A scope bound to a role the person lacks is left out of the grant, as at /authorize.
    const held = await scopesHeld(row.scope.split(' ') as Scope[], () => this.users.roleOf(session.userId));
    if (held.length === 0) return false;
    const grantId = uuidV7(now);
    const event = AuditService.event({ type: 'device.approved', ...base, details: { scope: held.join(' ') } }, context, now);
    const approved = await this.requests.approve(
      {
        userCodeHash,
        userId: session.userId,
        grantId,
        now,
        grantExpiresAt: now + this.config.refreshTokenTtl * 1000,
        authTime: session.authTime,
        sid: session.sid,
        amr: session.amr,
        scope: held.join(' '),
      },
      event,
    );
    if (approved) this.audit.log(event);
    return approved;
  }

  /**
   * RFC 8628 3.4/3.5: a poll of the token endpoint. Pending: `authorization_pending`, or `slow_down` (and five
   * seconds more between polls) for a poll before the interval has passed; denied: `access_denied`; past its
   * time: `expired_token`; approved: the tokens, once (the device code is then used up).
   */
  async poll(client: Client, deviceCode: string | undefined, binding: DpopBinding, context: AuditContext): Promise<TokenResponse> {
    if (!deviceCode) throw new OAuthError('invalid_request', 'device_code is required.');
    const row = await this.requests.byDeviceCode(hashSecret(deviceCode), client.id);
    if (!row || row.status === 'used') throw new OAuthError('invalid_grant', 'The device code is invalid or was used already.');
    const now = Date.now();
    if (epochMs(row.expires_at) <= now) throw new OAuthError('expired_token', 'The device code has expired; start again.');
    if (row.status === 'denied') throw new OAuthError('access_denied', 'The person denied the request.');
    if (row.status === 'pending') return this.stillPending(row, now);
    if (!(await this.requests.use(row.id))) throw new OAuthError('invalid_grant', 'The device code is invalid or was used already.');
    return this.tokensOf(client, row, now, binding, context);
  }

  private async stillPending(row: DeviceAuthorizationRow, now: number): Promise<never> {
    const interval = Number(row.interval_seconds);
    if (now + POLL_SLACK_MS < epochMs(row.next_poll_at)) {
      const slower = interval + 5;
      await this.requests.polled(row.id, slower, now + slower * 1000);
      throw new OAuthError('slow_down', `Poll at most every ${slower} seconds.`);
    }
    await this.requests.polled(row.id, interval, now + interval * 1000);
    throw new OAuthError('authorization_pending', 'The person has not answered yet.');
  }

  private async tokensOf(client: Client, row: DeviceAuthorizationRow, now: number, binding: DpopBinding, context: AuditContext) {
    const grant = await this.grants.issuable(row.grant_id!, now);
    if (!grant) throw new OAuthError('invalid_grant', 'The grant is no longer valid.');
    const event = AuditService.event(
      { type: 'device.redeemed', actor: `client:${client.id}`, userId: grant.userId, clientId: client.id },
      context,
      now,
    );
    const ref = {
      id: grant.id,
      userId: grant.userId,
      clientId: client.id,
      expiresAt: grant.expiresAt,
      audience: this.resources.audienceFor([], grant.resources),
      login: grant.login,
    };
    return this.issuer.issueFor(client, ref, grant.scope, now, event, binding);
  }

  /**
   * Stores a request under new codes; a user code that is already live (one in about 10^12 per pair, but a
   * unique index says so) is drawn again instead of failing the request.
   */
  private async stored(
    request: (codes: { deviceCode: string; userCode: string }) => Parameters<DeviceAuthorizationsRepository['insert']>[0],
    event: AuditEvent,
  ): Promise<{ deviceCode: string; userCode: string }> {
    for (let attempt = 1; ; attempt++) {
      const codes = { deviceCode: randomSecret(32), userCode: newUserCode() };
      try {
        await this.requests.insert(request(codes), event);
        return codes;
      } catch (error) {
        if (!isUniqueViolation(error) || attempt === 3) throw error;
      }
    }
  }
}

/** The client's own minimum level (`minimum_acr`, as /authorize holds it) when the session's sign-in falls short of it. */
function levelShort(client: Client, session: CurrentSession): Acr | null {
  const level = client.minimumAcr;
  return level === null || meetsAcr(acrOfStored(session.amr), level) ? null : level;
}

/** The scope of a device request: a subset of the client's registered scopes, or those less OpenID's when omitted. */
function requestedScope(client: Client, raw: string | undefined): string {
  const registered = client.scope.split(' ');
  if (raw === undefined || raw.trim() === '') {
    const scope = registered.filter((s) => !OIDC_SCOPES.has(s)).join(' ');
    if (scope === '') throw new OAuthError('invalid_scope', 'scope is required: this client may have only OpenID Connect scopes.');
    return scope;
  }
  const requested = [...new Set(raw.split(' ').filter(Boolean))];
  const bad = requested.filter((s) => !registered.includes(s));
  if (bad.length) throw new OAuthError('invalid_scope', `Scope not allowed for this client: ${bad.join(' ')}`);
  return requested.join(' ');
}
