import { randomUUID } from 'node:crypto';
import { SchedulerRegistry } from '@nestjs/schedule';
import { describe, expect, it } from 'vitest';
import type { AppConfig } from '../config/app-config';
import type { AuthConfig } from './auth.config';
import type { RevokedGrantsRepository, RevokedPage } from './revoked-grants.repository';
import { PAGE_ROWS, RevokedGrantsService } from './revoked-grants.service';

/**
 * A revoked list of pages of `pages` grant ids each, recording what is asked of it, in order. Each page's snapshot
 * says the next sync may resume at `nexts[page]` (7 when not given).
 */
function listOf(pages: number[], events: string[], nexts: number[] = [], failing?: number) {
  const until = Date.now() + 3_600_000;
  const made = pages.map((size, page) => Array.from({ length: size }, (_, i) => ({ id: randomUUID(), seq: page * 100_000 + i })));
  let asked = 0;
  const entries = {
    pageFrom: async (after: { seq: number }): Promise<RevokedPage> => {
      events.push(`page ${asked} from ${after.seq}`);
      if (asked === failing) {
        asked++;
        throw new Error('connection lost');
      }
      const rows = made[asked] ?? [];
      const last = rows.at(-1);
      return {
        next: nexts[asked++] ?? 7,
        count: rows.length,
        grants: rows.map((row) => `${row.id}${until}`).join('\n'),
        others: [],
        last: last && { seq: last.seq, revokedAt: 1, id: last.id },
      };
    },
  } as unknown as RevokedGrantsRepository;
  return { entries, made };
}

const config = { accessTokenTtl: 900 } as AppConfig;
const authConfig = { revocationSyncSeconds: 5 } as AuthConfig;

describe('RevokedGrantsService.sync', () => {
  it('reads a long list a page at a time, asking for the next before it decodes one, and resumes from the cursor', async () => {
    const events: string[] = [];
    const { entries, made } = listOf([PAGE_ROWS, PAGE_ROWS, 3], events, [7, 9, 11]);
    const service = new RevokedGrantsService(entries, config, authConfig, new SchedulerRegistry());

    const synced = service.sync();
    // Scheduled once the sync has started: runs while it decodes its first page when it yields, after it when not.
    setImmediate(() => events.push('other work'));
    await synced;

    expect(events).toEqual(['page 0 from 0', `page 1 from ${PAGE_ROWS - 1}`, 'other work', `page 2 from ${100_000 + PAGE_ROWS - 1}`]);
    const now = Math.floor(Date.now() / 1000);
    expect(made.flat().every((entry) => service.isRevoked(entry.id, now))).toBe(true);
    expect(service.isRevoked(randomUUID(), now)).toBe(false);

    // The next sync starts from the cursor of the first page's snapshot (the oldest), not a later page's.
    events.length = 0;
    await service.sync();
    expect(events).toEqual(['page 3 from 7']);
  });

  it('yields while it decodes a page, not only between pages', async () => {
    const events: string[] = [];
    const { entries } = listOf([PAGE_ROWS - 1], events);
    const service = new RevokedGrantsService(entries, config, authConfig, new SchedulerRegistry());

    let turns = 0;
    const count = () => {
      turns++;
      if (!done) setImmediate(count);
    };
    let done = false;
    const synced = service.sync().then(() => (done = true));
    setImmediate(count);
    await synced;
    // One page of 9,999 ids: other work ran at each yield, three within it (every 2,500 ids) and one after it.
    expect(events).toEqual(['page 0 from 0']);
    expect(turns).toBe(4);
  });

  it('reads the whole list again when the numbers are below its cursor (another database behind the same URL)', async () => {
    const events: string[] = [];
    const { entries } = listOf([3, 0, 2, 0], events, [50, 4, 4, 4]);
    const service = new RevokedGrantsService(entries, config, authConfig, new SchedulerRegistry());

    await service.sync();
    expect(events).toEqual(['page 0 from 0']);
    events.length = 0;
    await service.sync();
    expect(events).toEqual(['page 1 from 50', 'page 2 from 0']);
    events.length = 0;
    await service.sync();
    expect(events).toEqual(['page 3 from 4']);
  });

  it('keeps its cursor when a page it asked for ahead fails, and reads from there next time', async () => {
    const events: string[] = [];
    const { entries, made } = listOf([PAGE_ROWS, 5, 3], events, [7, 9, 11], 1);
    const service = new RevokedGrantsService(entries, config, authConfig, new SchedulerRegistry());

    // The second page fails while the first is decoded: no unhandled rejection, the sync ends with a warning.
    await service.sync();
    const now = Math.floor(Date.now() / 1000);
    expect(made[0].every((entry) => service.isRevoked(entry.id, now))).toBe(true);
    await service.sync();
    expect(events).toEqual(['page 0 from 0', `page 1 from ${PAGE_ROWS - 1}`, 'page 2 from 0']);
  });

  it('runs one more sync after the one under way, for the callers that came meanwhile (their writes may be newer)', async () => {
    const events: string[] = [];
    const { entries } = listOf([3], events);
    const service = new RevokedGrantsService(entries, config, authConfig, new SchedulerRegistry());

    const underWay = service.sync();
    const second = service.sync();
    expect(service.sync()).toBe(second);
    await Promise.all([underWay, second]);
    expect(events).toEqual(['page 0 from 0', 'page 1 from 7']);
  });
});
