import { describe, expect, it } from 'vitest';
import { uuidV7 } from './uuid-v7';

describe('uuidV7', () => {
  it('is a version 7 UUID whose first 48 bits are the time in milliseconds (RFC 9562 5.7)', () => {
    const at = Date.UTC(2026, 10, 24, 12, 0, 0, 123);
    const id = uuidV7(at);
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(parseInt(id.slice(0, 8) + id.slice(9, 13), 16)).toBe(at);
  });

  it('sorts by time, and differs within the same millisecond', () => {
    const earlier = uuidV7(1_000_000);
    const later = uuidV7(1_000_001);
    expect(earlier < later).toBe(true);
    const same = new Set(Array.from({ length: 1000 }, () => uuidV7(1_000_000)));
    expect(same.size).toBe(1000);
  });
});
