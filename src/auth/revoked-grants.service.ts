import { Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { AppConfig } from '../config/app-config';
import type { StatementWrite } from '../database/sql';
import { RevokedGrantsRepository, type RevokedPage } from './revoked-grants.repository';
import { AuthConfig } from './auth.config';
import { CLOCK_SKEW_SECONDS } from '../keys/signing-keys.service';
import { GrantIdTable, isUuid } from './grant-id-table';
import type { AuthPrincipal } from './principal';

/** The `gid` of a client's client-credentials tokens is this prefix and the client id. */
export const CLIENT_CREDENTIALS_GRANT_PREFIX = 'cc:';
/**
 * Entries that revoke every token of one subject issued up to the revocation, whatever its grant: one row for a
 * deleted client (its grants' tokens, its client-credentials tokens, the tokens it or others obtained by exchanging
 * them) or a deleted person, however many grants they had.
 */
const CLIENT_PREFIX = 'client:';
const USER_PREFIX = 'user:';
/**
 * A whole-client or whole-person entry also covers tokens issued this long after it was made: those issued between
 * the entry and the deletion's commit, and by an instance whose clock runs ahead (up to the skew allowed).
 */
const DELETION_MARGIN_MS = CLOCK_SKEW_SECONDS * 1000;
/** Rows of an earlier version: every token a client obtained by token exchange until then (now a client entry). */
const EXCHANGED_TOKENS_PREFIX = 'tx:';

/** The revoked-list entry of every token of a client (deleted) issued until now. */
export function clientTokensId(clientId: string): string {
  return `${CLIENT_PREFIX}${clientId}`;
}

/** The revoked-list entry of every token of a person (deleted) issued until now. */
export function userTokensId(userId: string): string {
  return `${USER_PREFIX}${userId}`;
}

interface Revocation {
  at: number;
  until: number;
}

/**
 * Entries read a page (one row of one statement) at a time: 1,000 pages for a million. On SQLite the read runs on the
 * event loop, so a page is what it may hold: about 10 ms, measured.
 */
export const PAGE_ROWS = 10_000;
/** Grant ids added to the table between two yields: a page is decoded in slices. */
const SLICE_ROWS = 2_500;
/** Before every row of the cursor's number (revoked_at is never negative). */
function startOf(cursor: number): { seq: number; revokedAt: number; id: string } {
  return { seq: cursor, revokedAt: -1, id: '' };
}

/** The sync's name in the scheduler's registry. */
export const REVOKED_LIST_SYNC = 'revoked-list.sync';

/**
 * The revoked list: the grants (and whole clients and people) whose access tokens may still be unexpired, held in
 * memory so that the resource server rejects them without a query per request. Filled once at start, then within
 * REVOCATION_SYNC_SECONDS with what is new in the database (the rows written since the last read's cursor, a page
 * of one statement at a time, decoded in slices that yield; nothing new, one indexed query that finds nothing).
 * Grant ids live in a {@link GrantIdTable} (outside the JavaScript heap); the few whole-client and whole-person
 * entries in a map.
 */
@Injectable()
export class RevokedGrantsService implements OnModuleInit {
  private readonly logger = new Logger(RevokedGrantsService.name);
  private readonly grants = new GrantIdTable();
  /** Entries that are not a grant id (client, person, client credentials), by their id: when and until when. */
  private readonly subjects = new Map<string, Revocation>();
  /** Where the next sync reads from: every entry written below it has been read (a page's `next`). */
  private cursor = 0;
  private syncing: Promise<void> | undefined;
  /** The sync that runs after the one under way, for the callers that came meanwhile. */
  private following: Promise<void> | undefined;

  constructor(
    private readonly entries: RevokedGrantsRepository,
    private readonly config: AppConfig,
    private readonly authConfig: AuthConfig,
    private readonly scheduler: SchedulerRegistry,
  ) {}

  async onModuleInit(): Promise<void> {
    await this.sync();
    // Every half interval: a revocation committed just after one look is read by the next, and the other half is
    // the read's, so it counts within REVOCATION_SYNC_SECONDS. With nothing new a look is one indexed query.
    // Not keeping the process alive; the scheduler clears it when the application shuts down.
    const every = setInterval(() => void this.sync(), this.authConfig.revocationSyncSeconds * 500).unref();
    this.scheduler.addInterval(REVOKED_LIST_SYNC, every);
  }

  /**
   * Whether an access token of `grantId` issued at `issuedAt` (seconds) is revoked. A revoked grant's tokens all
   * are, whenever issued (one still in flight on another instance included). A client's client-credentials
   * "grant" ({@link CLIENT_CREDENTIALS_GRANT_PREFIX}) lives on: only its tokens issued up to the revocation are.
   */
  isRevoked(grantId: string, issuedAt: number): boolean {
    if (isUuid(grantId)) return this.grants.has(grantId, Math.floor(Date.now() / 1000));
    return this.revokedUntilNow(grantId, issuedAt);
  }

  /**
   * Whether an access token is revoked: its grant ({@link isRevoked}), every token of its client, of the client
   * whose grant it was exchanged from, or of its person (deleted), and for a token from an exchange by an earlier
   * version, that version's entry of its client.
   */
  isTokenRevoked(token: Pick<AuthPrincipal, 'kind' | 'sub' | 'grantId' | 'iat' | 'clientId' | 'grantClientId' | 'act'>): boolean {
    if (this.isRevoked(token.grantId, token.iat)) return true;
    if (this.subjects.size === 0) return false;
    return (
      this.revokedUntilNow(clientTokensId(token.clientId), token.iat) ||
      (token.grantClientId !== undefined && this.revokedUntilNow(clientTokensId(token.grantClientId), token.iat)) ||
      (token.kind === 'user' && this.revokedUntilNow(userTokensId(token.sub), token.iat)) ||
      (token.act !== undefined && this.revokedUntilNow(`${EXCHANGED_TOKENS_PREFIX}${token.clientId}`, token.iat))
    );
  }

  /** Whether a whole-subject entry `id` revokes a token issued at `issuedAt` (seconds). */
  private revokedUntilNow(id: string, issuedAt: number): boolean {
    const revocation = this.subjects.get(id);
    if (revocation === undefined || revocation.until <= Date.now()) return false;
    // A deleted client or person: also the tokens issued while the deletion was committing, or by an instance
    // whose clock runs ahead (nothing legitimate is issued to them after). A client's secret replaced: exactly.
    const margin = id.startsWith(CLIENT_CREDENTIALS_GRANT_PREFIX) ? 0 : DELETION_MARGIN_MS;
    return issuedAt * 1000 <= revocation.at + margin;
  }

  /**
   * A revocation as one of a group of atomic writes ({@link SqlRunner.atomic}): a grant id, or an entry of
   * {@link clientTokensId} / {@link userTokensId}. Once they are committed, {@link applied} makes it count here at
   * once (other instances see it within REVOCATION_SYNC_SECONDS).
   */
  revocationWrite(id: string, now: number): StatementWrite {
    return RevokedGrantsRepository.upsertOf(id, now, this.expiryOf(now));
  }

  applied(ids: string[], now: number): void {
    for (const id of ids) this.apply(id, now, this.expiryOf(now));
  }

  /** Until when an entry made at `now` stays on the list: its access tokens' longest life (and the deletion margin). */
  expiryOf(now: number): number {
    return now + (this.config.accessTokenTtl + CLOCK_SKEW_SECONDS) * 1000 + DELETION_MARGIN_MS;
  }

  /** Records entries (a few: a client's, a person's) as revoked and applies them here at once. */
  async revoke(ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    const now = Date.now();
    await this.entries.upsertAll(ids, now, this.expiryOf(now));
    this.applied(ids, now);
  }

  private apply(id: string, at: number, until: number): void {
    if (isUuid(id)) {
      this.grants.set(id, Math.ceil(until / 1000), Math.floor(Date.now() / 1000));
      return;
    }
    const known = this.subjects.get(id);
    // Revoked again (a client's client-credentials tokens): the later time counts.
    if (!known || known.at < at) this.subjects.set(id, { at, until });
  }

  /**
   * Reads the entries written since the last sync (at start: every live one), all those committed before the call
   * included; one sync at a time. A sync already under way may have taken its cursor before them: another follows it.
   */
  sync(): Promise<void> {
    if (this.syncing) {
      this.following ??= this.syncing.then(() => {
        this.following = undefined;
        return this.sync();
      });
      return this.following;
    }
    this.syncing = this.readNew().finally(() => (this.syncing = undefined));
    return this.syncing;
  }

  private async readNew(): Promise<void> {
    try {
      const now = Date.now();
      // The first page's snapshot is the oldest: what was written meanwhile at or above its cursor is read next time.
      let next: number | undefined;
      let read = 0;
      let waited = 0;
      let pending = this.pageAfter(startOf(this.cursor), now);
      for (;;) {
        const asked = performance.now();
        const page = await pending;
        waited += performance.now() - asked;
        next ??= page.next;
        read += page.count;
        const more = page.last !== undefined && page.count === PAGE_ROWS;
        // The next page is asked for before this one is decoded: the database reads it meanwhile.
        if (more) pending = this.pageAfter(page.last!, now);
        await this.applyPage(page, now);
        if (more) continue;
        if (next >= this.cursor) break;
        // Numbers below ours: another database behind the same URL (a restore, a switch of clusters). Read it all.
        this.cursor = 0;
        pending = this.pageAfter(startOf(0), now);
      }
      this.cursor = next;
      // A mass revocation: how long it took to count here (the promise holds while it takes under half of REVOCATION_SYNC_SECONDS).
      if (read >= PAGE_ROWS) {
        this.logger.log(`read ${read} revoked-list entries in ${Date.now() - now} ms (${Math.round(waited)} ms waiting for pages)`);
      }
      for (const [id, revocation] of this.subjects) if (revocation.until <= now) this.subjects.delete(id);
    } catch (error) {
      this.logger.warn(`could not refresh revoked grants: ${(error as Error).message}`);
    }
  }

  /** The page after `after`, its failure left to whoever awaits it (not unhandled while another page is decoded). */
  private pageAfter(after: { seq: number; revokedAt: number; id: string }, now: number): Promise<RevokedPage> {
    const page = this.entries.pageFrom(after, now, PAGE_ROWS);
    page.catch(() => undefined);
    return page;
  }

  /** Applies a page, yielding to other work between slices and after it (a long list never holds the event loop). */
  private async applyPage(page: RevokedPage, now: number): Promise<void> {
    for (const entry of page.others) this.apply(entry.id, entry.revokedAt, entry.expiresAt);
    const text = page.grants;
    const nowSeconds = Math.floor(now / 1000);
    let rows = 0;
    // Lines of a UUID (36 characters) and its expiry in epoch ms, read in place: nothing allocated per entry.
    for (let at = 0; at < text.length;) {
      let end = text.indexOf('\n', at + 36);
      if (end < 0) end = text.length;
      let expiresAt = 0;
      for (let i = at + 36; i < end; i++) expiresAt = expiresAt * 10 + text.charCodeAt(i) - 48;
      // An id of a UUID's shape that is not one (not added) matches no token's grant: those are UUIDs.
      this.grants.setAt(text, at, Math.ceil(expiresAt / 1000), nowSeconds);
      at = end + 1;
      if (++rows % SLICE_ROWS === 0) await nextTurn();
    }
    await nextTurn();
  }
}
