import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { uuidV7 } from '../common/uuid-v7';
import { GrantIdTable, isUuid } from './grant-id-table';

describe('GrantIdTable', () => {
  const now = 1_800_000_000;

  it('holds a UUID until its time, and not after', () => {
    const table = new GrantIdTable();
    const id = uuidV7();
    table.set(id, now + 60, now);
    expect(table.has(id, now)).toBe(true);
    expect(table.has(id, now + 59)).toBe(true);
    expect(table.has(id, now + 60)).toBe(false);
    expect(table.has(uuidV7(), now)).toBe(false);
  });

  it('adds the UUIDs that lie in a longer string where they are, and refuses what is not one', () => {
    const table = new GrantIdTable();
    const [a, b] = [uuidV7(), randomUUID()];
    const text = `${a}1800000060000\n${b}1800000060000`;
    expect(table.setAt(text, 0, now + 60, now)).toBe(true);
    expect(table.setAt(text, 50, now + 60, now)).toBe(true);
    expect([table.has(a, now), table.has(b, now)]).toEqual([true, true]);

    // Upper case, a character out of place, a dash missing, cut short: not added.
    const refused = [a.toUpperCase(), `${a.slice(0, 35)}g`, `${a.slice(0, 8)}0${a.slice(9)}`, a.slice(0, 35)];
    expect(refused.map((id) => table.setAt(`x${id}`, 1, now + 60, now))).toEqual([false, false, false, false]);
    expect(table.size).toBe(2);
  });

  it('keeps the later time when an id is set again', () => {
    const table = new GrantIdTable();
    const id = randomUUID();
    table.set(id, now + 100, now);
    table.set(id, now + 10, now);
    expect(table.has(id, now + 50)).toBe(true);
    expect(table.size).toBe(1);
  });

  it('grows past its first size, tells every id apart, and drops expired entries when it rebuilds', () => {
    const table = new GrantIdTable();
    const live = Array.from({ length: 5_000 }, () => uuidV7());
    const expiring = Array.from({ length: 5_000 }, () => randomUUID());
    for (const id of expiring) table.set(id, now + 1, now);
    // Later, the expiring ones are past: the growth that these cause leaves them out.
    for (const id of live) table.set(id, now + 1_000, now + 10);
    expect(live.every((id) => table.has(id, now + 10))).toBe(true);
    expect(expiring.some((id) => table.has(id, now + 10))).toBe(false);
    expect(table.size).toBeLessThan(live.length + expiring.length);
    expect(table.size).toBeGreaterThanOrEqual(live.length);
    // Ids that differ in one hex digit only are different entries.
    const id = '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b';
    table.set(id, now + 1_000, now + 10);
    expect(table.has('0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5c', now + 10)).toBe(false);
    expect(table.has(id, now + 10)).toBe(true);
  });

  it('takes at most 50 MB for a million ids (outside the heap)', () => {
    const table = new GrantIdTable();
    for (let i = 0; i < 1_000_000; i++) table.set(uuidV7(now * 1000 + i), now + 900, now);
    expect(table.size).toBe(1_000_000);
    expect(table.bytes).toBeLessThanOrEqual(4_194_304 * 12);
  });

  it('tells UUIDs from other entry ids', () => {
    expect(isUuid(uuidV7())).toBe(true);
    expect(isUuid(randomUUID())).toBe(true);
    expect(isUuid('cc:client')).toBe(false);
    expect(isUuid(`client:${randomUUID()}`)).toBe(false);
    expect(isUuid(randomUUID().toUpperCase())).toBe(false);
  });
});
