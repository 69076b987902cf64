import { randomUUID } from 'node:crypto';

/**
 * A UUID version 7 (RFC 9562 5.7): 48 bits of Unix time in milliseconds, then 74 random bits. Rows keyed by it
 * go in at the right-hand end of their indexes, as time goes, instead of at a random leaf: a grant's id is the key
 * of `grants` and is indexed in `authorization_codes` and `refresh_tokens`, so with random ids every code flow
 * changed three random index pages, each one more page to write to the log (SQLite's WAL, PostgreSQL's) and,
 * once the tables outgrow the cache, to read. It reveals the time it was made, as the tokens' `iat` does anyway.
 */
export function uuidV7(now = Date.now()): string {
  // randomUUID's 122 random bits (from Node's pooled CSPRNG bytes); its version digit (index 14) becomes 7, its
  // variant (index 19) stays RFC 9562's.
  const random = randomUUID();
  const time = now.toString(16).padStart(12, '0');
  return `${time.slice(0, 8)}-${time.slice(8)}-7${random.slice(15)}`;
}
