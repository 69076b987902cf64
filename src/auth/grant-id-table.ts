/** A UUID in its canonical text form (any version): the form every grant id has. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** A key: a 64-bit fingerprint of the UUID, as two 32-bit words. */
const WORDS = 2;
/** The table grows (or first drops its expired entries) when more than this share of its slots is taken. */
const MAX_LOAD = 0.6;
const MIN_SLOTS = 1024;
/** Slots of the table being replaced that each `set` moves over: a growth never holds the event loop. */
const MOVE_PER_SET = 64;

export function isUuid(id: string): boolean {
  return UUID.test(id);
}

/** One open-addressing table: a key of two words and a time (0: an empty slot) per slot. */
class Slots {
  readonly keys: Uint32Array;
  readonly until: Uint32Array;
  used = 0;

  constructor(readonly count: number) {
    this.keys = new Uint32Array(count * WORDS);
    this.until = new Uint32Array(count);
  }

  /** The slot holding the key at `words[from…]`, or -1. */
  find(words: Uint32Array, from: number): number {
    const mask = this.count - 1;
    const keys = this.keys;
    for (let slot = hashOf(words, from) & mask; ; slot = (slot + 1) & mask) {
      if (this.until[slot] === 0) return -1;
      const at = slot * WORDS;
      if (keys[at] === words[from] && keys[at + 1] === words[from + 1]) return slot;
    }
  }

  /** The slot holding the key at `words[from…]`, or the empty one where it would go. */
  probe(words: Uint32Array, from: number): number {
    const mask = this.count - 1;
    const keys = this.keys;
    for (let slot = hashOf(words, from) & mask; ; slot = (slot + 1) & mask) {
      const at = slot * WORDS;
      if (this.until[slot] === 0 || (keys[at] === words[from] && keys[at + 1] === words[from + 1])) return slot;
    }
  }

  insert(words: Uint32Array, from: number, untilSeconds: number): void {
    const mask = this.count - 1;
    let slot = hashOf(words, from) & mask;
    while (this.until[slot] !== 0) slot = (slot + 1) & mask;
    this.place(slot, words, from, untilSeconds);
  }

  /** Puts the key at `words[from…]` in the empty `slot`. */
  place(slot: number, words: Uint32Array, from: number, untilSeconds: number): void {
    const at = slot * WORDS;
    for (let i = 0; i < WORDS; i++) this.keys[at + i] = words[from + i];
    this.until[slot] = Math.max(untilSeconds, 1);
    this.used++;
  }
}

/**
 * Revoked grant ids (UUIDs, by a 64-bit fingerprint) with the time each stays revoked until, in typed arrays: 12
 * bytes a slot, outside the JavaScript heap, instead of a Map of strings to `{ at, until }` (a million of them:
 * 157 MB of heap, measured).
 * Open addressing with linear probing; entries are never removed one by one. When the table fills, a table with
 * room for twice its live entries takes over, and the old one's live entries move over a few slots per `set`
 * (a million at once took 234 ms); until they all have, a look-up reads both.
 */
export class GrantIdTable {
  private current: Slots;
  /** The table being replaced, and the next of its slots to move. */
  private previous: Slots | undefined;
  private moved = 0;

  constructor(slots = MIN_SLOTS) {
    this.current = new Slots(slots);
  }

  /** Entries held, expired ones not dropped yet included. */
  get size(): number {
    return this.current.used + (this.previous?.used ?? 0);
  }

  /** Bytes held by the tables' arrays. */
  get bytes(): number {
    const bytesOf = (slots: Slots | undefined) => (slots ? slots.keys.byteLength + slots.until.byteLength : 0);
    return bytesOf(this.current) + bytesOf(this.previous);
  }

  /** Whether `id` (a UUID) is in the table and counts at `nowSeconds`. */
  has(id: string, nowSeconds: number): boolean {
    const words = wordsOf(id);
    let slot = this.current.find(words, 0);
    if (slot >= 0) return this.current.until[slot] > nowSeconds;
    if (!this.previous) return false;
    slot = this.previous.find(words, 0);
    return slot >= 0 && this.previous.until[slot] > nowSeconds;
  }

  /** Adds `id` (a UUID) until `untilSeconds`; an entry already there keeps the later time. */
  set(id: string, untilSeconds: number, nowSeconds: number): void {
    this.setAt(id, 0, untilSeconds, nowSeconds);
  }

  /**
   * {@link set} for the UUID at `from` in `text` (a page of the list read as one string: nothing cut out per entry),
   * checked as it is read: false, and nothing added, when what is there is not one (lower-case, as {@link isUuid}).
   */
  setAt(text: string, from: number, untilSeconds: number, nowSeconds: number): boolean {
    if (!fingerprintAt(text, from)) return false;
    const words = scratch;
    // One probe: the entry's slot, or the empty one where it goes.
    let slot = this.current.probe(words, 0);
    if (this.current.until[slot] !== 0) {
      this.current.until[slot] = Math.max(this.current.until[slot], untilSeconds);
    } else if (this.previous && this.updated(this.previous, words, untilSeconds)) {
      // It moves over with its new time.
    } else {
      if ((this.current.used + 1) / this.current.count > MAX_LOAD) {
        this.grow(nowSeconds);
        slot = this.current.probe(words, 0);
      }
      this.current.place(slot, words, 0, untilSeconds);
    }
    if (this.previous) this.moveSome(MOVE_PER_SET, nowSeconds);
    return true;
  }

  /** Updates the entry in the table being replaced, if it is there and not passed over yet (an expired one is). */
  private updated(slots: Slots, words: Uint32Array, untilSeconds: number): boolean {
    const slot = slots.find(words, 0);
    if (slot < this.moved) return false;
    slots.until[slot] = Math.max(slots.until[slot], untilSeconds);
    return true;
  }

  /** A table with room for twice the live entries takes over; the old one's move over later (see {@link set}). */
  private grow(nowSeconds: number): void {
    // A growth due while the last one is still moving finishes that one first (the new table is then full-sized).
    if (this.previous) this.moveSome(this.previous.count, nowSeconds);
    const old = this.current;
    let live = 0;
    for (let slot = 0; slot < old.count; slot++) if (old.until[slot] > nowSeconds) live++;
    let count = MIN_SLOTS;
    while ((live + 1) / count > MAX_LOAD / 2) count *= 2;
    this.current = new Slots(count);
    this.previous = old;
    this.moved = 0;
  }

  /** Moves up to `slots` slots of the table being replaced, dropping expired entries. */
  private moveSome(slots: number, nowSeconds: number): void {
    const old = this.previous!;
    const end = Math.min(old.count, this.moved + slots);
    for (let slot = this.moved; slot < end; slot++) {
      const until = old.until[slot];
      if (until === 0) continue;
      old.used--;
      if (until > nowSeconds) this.current.insert(old.keys, slot * WORDS, until);
    }
    this.moved = end;
    if (end === old.count) this.previous = undefined;
  }
}

const scratch = new Uint32Array(WORDS);

/**
 * The 64-bit fingerprint of the UUID at `from`, as two 32-bit words (in a scratch array: copied by whoever keeps
 * them): its first half XOR its second. A grant id's second half is random (UUID v7: 62 random bits; v4: 61), so
 * another id has the same fingerprint as one of a million revoked ones with a chance of about 1 in 4 * 10^12: such a
 * token would be refused (never one let in).
 */
function wordsOf(id: string): Uint32Array {
  fingerprintAt(id, 0);
  return scratch;
}

/** Puts the fingerprint of the UUID at `from` in `text` in the scratch array; false if what is there is not one. */
function fingerprintAt(text: string, from: number): boolean {
  if (from + 36 > text.length) return false;
  scratch[0] = 0;
  scratch[1] = 0;
  let word = 0;
  let digits = 0;
  for (let i = 0; i < 36; i++) {
    const c = text.charCodeAt(from + i);
    if (i === 8 || i === 13 || i === 18 || i === 23) {
      if (c !== 45) return false; // '-'
      continue;
    }
    if (c >= 48 && c <= 57) word = ((word << 4) | (c - 48)) >>> 0;
    else if (c >= 97 && c <= 102) word = ((word << 4) | (c - 87)) >>> 0;
    else return false;
    if (++digits % 8 === 0) {
      scratch[(digits / 8 - 1) % WORDS] ^= word;
      word = 0;
    }
  }
  return true;
}

/** A 32-bit mix of the key's two words from `from` (a v7 UUID's first half is a clock, so both count). */
function hashOf(words: Uint32Array, from: number): number {
  let h = Math.imul(words[from] ^ 0x811c9dc5, 0x01000193);
  h = Math.imul(h ^ (h >>> 15) ^ words[from + 1], 0x5bd1e995);
  return (h ^ (h >>> 13)) >>> 0;
}
