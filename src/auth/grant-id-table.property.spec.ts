import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { beforeEach, describe, expect, it } from 'vitest';
import { GrantIdTable, isUuid } from './grant-id-table';

/**
 * The table against a model under random sequences of writes, look-ups, clock steps and growths: a `Set` of ids
 * while nothing expires, a `Map` of each id's latest time when entries do. The table has no delete; an entry
 * leaves by expiring, and a growth drops the expired ones, so the clock steps are its deletions. Time only moves
 * forward, as it does for the service.
 */

/** Fixed seeds: the same sequences in every run, so a failure reproduces. */
const SEED = 731_406;
const START = 1_800_000_000;
/** A time no step of these sequences reaches: nothing expires. */
const FOREVER = START * 2;
/** Fresh ids a growth-seeking step adds at most (a table of 16384 slots grows at 9831). */
const MAX_GROWTH_ADDS = 12_000;

/**
 * The i-th id: distinct, the same in every run, half of them v7-like (a shared, rising clock in the first half: the
 * keys a hash must still spread) and half v4-like. Their 64-bit fingerprints collide with a chance of about 1 in
 * 10^10 over the 50,000 the tests use; being fixed, a collision would fail every run, not some.
 */
const ids: string[] = [];
function idOf(i: number): string {
  while (ids.length <= i) {
    const n = ids.length;
    const h = createHash('sha256').update(`grant ${n}`).digest('hex');
    const variant = '89ab'[parseInt(h[30], 16) & 3];
    const hex =
      n % 2 === 0
        ? `${(START * 1000 + n).toString(16).padStart(12, '0')}7${h.slice(0, 3)}${variant}${h.slice(3, 18)}`
        : `${h.slice(0, 12)}4${h.slice(12, 15)}${variant}${h.slice(15, 30)}`;
    ids.push(`${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`);
  }
  return ids[i];
}

type Op =
  /** Sets a fresh id or one set before (`pick` among them), until `ttl` seconds from now. */
  | { kind: 'add'; fresh: boolean; pick: number; ttl: number }
  /** Looks up an id set before or one never set, `ahead` seconds from now (time does not move). */
  | { kind: 'has'; fresh: boolean; pick: number; ahead: number }
  /** Sets `count` fresh ids, the j-th until `ttl + j % (spread + 1)` seconds from now. */
  | { kind: 'fill'; count: number; ttl: number; spread: number }
  /** Sets fresh ids until a growth starts: the steps after it land while the old table's entries move over. */
  | { kind: 'grow'; ttl: number }
  | { kind: 'tick'; seconds: number };

function ops(expiring: boolean, maxLength: number): fc.Arbitrary<Op[]> {
  const ttl = expiring ? fc.integer({ min: 0, max: 60 }) : fc.constant(FOREVER - START);
  const op: fc.Arbitrary<Op> = fc.oneof(
    { weight: 8, arbitrary: fc.record({ kind: fc.constant('add' as const), fresh: fc.boolean(), pick: fc.nat(), ttl }) },
    { weight: 6, arbitrary: fc.record({ kind: fc.constant('has' as const), fresh: fc.boolean(), pick: fc.nat(), ahead: fc.nat(70) }) },
    {
      weight: 1,
      arbitrary: fc.record({ kind: fc.constant('fill' as const), count: fc.integer({ min: 1, max: 400 }), ttl, spread: fc.nat(60) }),
    },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('grow' as const), ttl }) },
    { weight: expiring ? 2 : 0, arbitrary: fc.record({ kind: fc.constant('tick' as const), seconds: fc.integer({ min: 1, max: 40 }) }) },
  );
  return fc.array(op, { minLength: 10, maxLength });
}

/**
 * Whether a growth is under way, read from the public `bytes`: 12 bytes a slot, slot counts powers of two, so one
 * table holds 12 * 2^k bytes and two tables (old and new, of different sizes) a sum that is not of that form. The
 * one case it misses, a growth into a table of the old one's size, only makes the counts below smaller.
 */
function growing(table: GrantIdTable): boolean {
  const slots = table.bytes / 12;
  return (slots & (slots - 1)) !== 0;
}

/** How often the generated sequences reached the states each test is for, summed over its runs. */
let seen = { stepsWhileGrowing: 0, updatesWhileGrowing: 0, growthsWhileGrowing: 0 };

/** Runs `steps` on a table of `slots` slots (after `prefill` entries, if any) and on the model, comparing them. */
function check(slots: number, steps: Op[], expiring: boolean, prefill?: { count: number; ttl: number; live: number }): void {
  const table = new GrantIdTable(slots);
  const model = new Map<string, number>();
  let now = START;
  let next = 0;
  const live = (id: string, at = now) => (model.get(id) ?? 0) > at;
  const set = (id: string, until: number) => {
    table.set(id, until, now);
    model.set(id, Math.max(model.get(id) ?? 0, until));
  };
  const same = (id: string, at = now) => {
    // `expect` only on a difference: it is most of the time of a comparison that holds.
    if (table.has(id, at) !== live(id, at)) expect(table.has(id, at), `${id} at +${at - START}`).toBe(live(id, at));
  };
  /** Every id set so far, and a few never set. */
  const sameAll = () => {
    for (let i = 0; i < next + 20; i++) same(idOf(i));
    if (!expiring) expect(table.size).toBe(model.size);
  };

  if (prefill) {
    for (let j = 0; j < prefill.count; j++) set(idOf(next++), j < prefill.live ? FOREVER : now + prefill.ttl);
  }
  let bytes = table.bytes;
  let wasGrowing = growing(table);
  for (const step of steps) {
    const before = growing(table);
    if (before) seen.stepsWhileGrowing++;
    if (step.kind === 'add') {
      const id = step.fresh || next === 0 ? idOf(next++) : idOf(step.pick % next);
      if (before && model.has(id)) seen.updatesWhileGrowing++;
      set(id, now + step.ttl);
      same(id);
    } else if (step.kind === 'has') {
      same(step.fresh || next === 0 ? idOf(next + (step.pick % 20)) : idOf(step.pick % next), now + step.ahead);
    } else if (step.kind === 'fill') {
      for (let j = 0; j < step.count; j++) set(idOf(next++), now + step.ttl + (j % (step.spread + 1)));
    } else if (step.kind === 'grow') {
      const from = table.bytes;
      for (let j = 0; j < MAX_GROWTH_ADDS && table.bytes === from; j++) set(idOf(next++), now + step.ttl);
    } else {
      now += step.seconds;
    }
    if (!expiring) expect(table.size).toBe(model.size);
    // A growth started or ended: everything must still be found.
    if (table.bytes !== bytes) {
      // From one pair of tables straight to another: a growth came due before the last one had moved everything.
      if (wasGrowing && growing(table)) seen.growthsWhileGrowing++;
      sameAll();
      bytes = table.bytes;
      wasGrowing = growing(table);
    }
  }
  sameAll();
}

describe('GrantIdTable against a model', () => {
  beforeEach(() => {
    seen = { stepsWhileGrowing: 0, updatesWhileGrowing: 0, growthsWhileGrowing: 0 };
  });

  it('holds exactly the ids of a Set when nothing expires, through growths', () => {
    fc.assert(
      fc.property(fc.constantFrom(128, 1024, 2048, 4096), ops(false, 200), (slots, steps) => check(slots, steps, false)),
      { seed: SEED, numRuns: 200 },
    );
    // The sequences reached what they are for: look-ups and writes, of new ids and of ids already there, while the
    // old table's entries were still moving over.
    expect(seen.stepsWhileGrowing).toBeGreaterThan(500);
    expect(seen.updatesWhileGrowing).toBeGreaterThan(100);
  });

  it('answers as a map of latest times does while entries expire, growths dropping them', () => {
    fc.assert(
      fc.property(fc.constantFrom(128, 1024, 2048, 4096), ops(true, 200), (slots, steps) => check(slots, steps, true)),
      { seed: SEED + 1, numRuns: 200 },
    );
    expect(seen.stepsWhileGrowing).toBeGreaterThan(500);
    expect(seen.updatesWhileGrowing).toBeGreaterThan(100);
  });

  it('stays right when a growth comes due before the last one has moved everything over', () => {
    // A table of 65536 slots that filled (39321 entries) with all but a few expired: its growth is into a table of
    // 1024 slots, and its 1024 moving steps leave room for the 615 writes that fill that one.
    const prefill = fc.record({ count: fc.constant(39_321), ttl: fc.integer({ min: 1, max: 30 }), live: fc.nat(200) });
    fc.assert(
      fc.property(prefill, ops(true, 60), (fill, steps) => check(65_536, [{ kind: 'tick', seconds: 31 }, ...steps], true, fill)),
      { seed: SEED + 2, numRuns: 25 },
    );
    expect(seen.growthsWhileGrowing).toBeGreaterThan(0);
  });

  it('uses ids of the form grant ids have', () => {
    expect([0, 1, 2, 3].map(idOf).every(isUuid)).toBe(true);
  });
});
