import { LRUCache } from 'lru-cache';

/** What a load gives the cache: the value and how long it may be reused. */
export interface Loaded<T> {
  value: T;
  ttlMs: number;
}

/** A load failure to remember for `ttlMs` (0: not at all; other errors are thrown and not remembered). */
export class CachedFailure extends Error {
  override name = 'CachedFailure';

  constructor(
    message: string,
    readonly ttlMs: number,
  ) {
    super(message);
  }
}

type Entry<T> = { until: number; value: T } | { until: number; failure: CachedFailure };

/**
 * Remote documents by URL, each instance its own: a value is reused until its time is up, a {@link CachedFailure}
 * is thrown again until its (short) time is up — so a flood of requests naming a broken URL costs one fetch — and
 * concurrent requests for one URL share one load (which gets the `context` of the request that started it). At
 * most `max` entries; the least recently used goes first.
 */
export class RemoteCache<T, C = void> {
  private readonly entries: LRUCache<string, Entry<T>>;
  private readonly loading = new Map<string, Promise<T>>();

  constructor(
    private readonly load: (key: string, context: C) => Promise<Loaded<T>>,
    max = 1_000,
  ) {
    this.entries = new LRUCache({ max });
  }

  async get(key: string, context: C, now = Date.now()): Promise<T> {
    const entry = this.entries.get(key);
    if (entry && entry.until > now) {
      if ('failure' in entry) throw entry.failure;
      return entry.value;
    }
    let pending = this.loading.get(key);
    if (!pending) {
      pending = this.loaded(key, context);
      this.loading.set(key, pending);
    }
    return pending;
  }

  /** Forgets one URL (or all): the next request loads it again. */
  forget(key?: string): void {
    if (key === undefined) this.entries.clear();
    else this.entries.delete(key);
  }

  private async loaded(key: string, context: C): Promise<T> {
    try {
      const { value, ttlMs } = await this.load(key, context);
      this.remember(key, { until: Date.now() + ttlMs, value });
      return value;
    } catch (error) {
      if (error instanceof CachedFailure && error.ttlMs > 0) this.remember(key, { until: Date.now() + error.ttlMs, failure: error });
      throw error;
    } finally {
      this.loading.delete(key);
    }
  }

  private remember(key: string, entry: Entry<T>): void {
    this.entries.set(key, entry);
  }
}
