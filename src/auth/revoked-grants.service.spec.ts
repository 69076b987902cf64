import { randomUUID } from 'node:crypto';
import { SchedulerRegistry } from '@nestjs/schedule';
import { describe, expect, it } from 'vitest';
import type { AppConfig } from '../config/app-config';
import type { AuthConfig } from './auth.config';
import type { RevokedEntry, RevokedGrantsRepository } from './revoked-grants.repository';
import { RevokedGrantsService } from './revoked-grants.service';

/** A revoked list of `pages` full pages and a short last one, recording what is asked of it, in order. */
function listOf(pages: number[], events: string[]) {
  const until = Date.now() + 3_600_000;
  const made = pages.map((size, page) =>
    Array.from({ length: size }, (_, i): RevokedEntry & { seq: number } => ({
      id: randomUUID(),
      revokedAt: Date.now(),
      expiresAt: until,
      seq: page * 10_000 + i,
    })),
  );
  let asked = 0;
  const entries = {
    cursor: async () => 7,
    pageFrom: async (after: { seq: number }) => {
      events.push(`page ${asked} from ${after.seq}`);
      return made[asked++] ?? [];
    },
  } as unknown as RevokedGrantsRepository;
  return { entries, made };
}

const config = { accessTokenTtl: 900 } as AppConfig;
const authConfig = { revocationSyncSeconds: 5 } as AuthConfig;

describe('RevokedGrantsService.sync', () => {
  it('reads a long list a page at a time, letting other work run between pages, and resumes from the cursor', async () => {
    const events: string[] = [];
    const { entries, made } = listOf([1_000, 1_000, 3], events);
    const service = new RevokedGrantsService(entries, config, authConfig, new SchedulerRegistry());

    const synced = service.sync();
    // Scheduled once the sync has started: runs between its pages when it yields, after them when it does not.
    setImmediate(() => events.push('other work'));
    await synced;

    expect(events).toEqual(['page 0 from 0', 'other work', 'page 1 from 999', 'page 2 from 10999']);
    const now = Math.floor(Date.now() / 1000);
    expect(made.flat().every((entry) => service.isRevoked(entry.id, now))).toBe(true);

    // The next sync starts from the cursor taken before the last one.
    events.length = 0;
    await service.sync();
    expect(events).toEqual(['page 3 from 7']);
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
