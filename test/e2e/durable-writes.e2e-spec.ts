import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NO_RATE_LIMITS, authorizeCode, pkcePair, registerClient, signedIn, token } from '../support/oauth';
import { type TestApp, createTestApp } from '../support/test-app';
import { ThrowawayPostgres } from '../support/throwaway-postgres';

/**
 * Nothing is acknowledged before it is durable (PostgreSQL): an authorization code the service has redirected with,
 * and its `code.issued` audit row, survive a database crash right after the answer. The WAL writer is slowed to its
 * maximum (10 s), so that a write committed without waiting for its WAL flush would be lost by the crash.
 */
describe('what the service acknowledged survives a database crash', () => {
  let db: ThrowawayPostgres;
  let t: TestApp;

  beforeAll(async () => {
    db = await ThrowawayPostgres.launch(['wal_writer_delay=10000']);
    t = await createTestApp({ ...NO_RATE_LIMITS }, { url: db.url, drop: async () => undefined });
  }, 120_000);
  afterAll(async () => {
    await t?.close();
    db?.destroy();
  });

  async function auditRows(clientId: string): Promise<string[]> {
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ type: string }>('SELECT type FROM audit_events WHERE client_id = $1 ORDER BY at', [clientId]);
      return rows.map((row) => row.type);
    } finally {
      await client.end();
    }
  }

  for (const trusted of [true, false]) {
    it(`keeps a code issued to a ${trusted ? 'trusted client (no consent page)' : 'client after consent'} and its audit row; the code redeems after recovery`, async () => {
      const client = await registerClient(t, { trusted });
      const { browser } = await signedIn(t);
      const pkce = pkcePair();
      const code = await authorizeCode(browser, client, { code_challenge: pkce.challenge, code_challenge_method: 'S256' });

      db.crash();
      db.start();

      const before = trusted ? ['client.created', 'code.issued'] : ['client.created', 'consent.granted', 'code.issued'];
      expect(await auditRows(client.client_id)).toEqual(before);
      const redeemed = await token(t, client, { grant_type: 'authorization_code', code, code_verifier: pkce.verifier });
      expect(redeemed.status, JSON.stringify(redeemed.body)).toBe(200);
      expect((await auditRows(client.client_id)).slice(0, before.length)).toEqual(before);
    });
  }
});
