import { DataSource } from 'typeorm';
import { Statement } from '../../src/database/sql';
import { USER_SORT_KEYS } from '../../src/users/dto/list-users-query.dto';
import { pageStatement } from '../../src/users/users.repository';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser, NO_RATE_LIMITS, issueTokens, registerClient, signedIn, token } from '../support/oauth';
import { type CapturedQuery, captureQueries } from '../support/queries';
import { type TestApp, createTestApp } from '../support/test-app';

/**
 * The statements each step of the code flow sends to the database, recorded from the real data source. The checks
 * are TypeScript, the same on both databases; only the writing differs. Authorize + token read the session, write
 * the grant, its code and the `code.issued` event, read the code with its grant, then consume it and store the
 * refresh token and the `code.redeemed` event together; a refresh reads the token with its grant, then rotates it
 * and stores its successor with the event. PostgreSQL writes rows that go together in one statement (a round trip
 * each, no unit needed for one statement): 4 statements in no unit, and 2 in none; SQLite, whose statements are
 * function calls, a statement per row: 8 in 2 units, and 4 in 1.
 */
const POSTGRES = Boolean(process.env.TEST_DATABASE_URL);
const FLOW = POSTGRES ? { units: 0, statements: 4 } : { units: 2, statements: 8 };
const REFRESH = POSTGRES ? { units: 0, statements: 2 } : { units: 1, statements: 4 };
const TRANSACTION_CONTROL = /^(START TRANSACTION|BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE)/i;

/** How many units of work (committed transactions) and how many other statements. */
function shape(statements: string[]): { units: number; statements: number } {
  const begun = statements.filter((text) => /^(START TRANSACTION|BEGIN)/i.test(text)).length;
  const committed = statements.filter((text) => /^COMMIT/i.test(text)).length;
  expect(committed, statements.join('\n')).toBe(begun);
  return { units: committed, statements: statements.filter((text) => !TRANSACTION_CONTROL.test(text)).length };
}

/** Statements of the background jobs (revoked-grant sync, signing-key reload) that may run meanwhile. */
const BACKGROUND = /\b(revoked_grants|signing_keys)\b/i;

function foreground(queries: CapturedQuery[]): string[] {
  return queries.map((q) => q.sql).filter((text) => !BACKGROUND.test(text));
}

/** Tables that grow with use: a hot statement must never read one of them whole. */
const GROWING = new Set(['grants', 'authorization_codes', 'refresh_tokens', 'audit_events', 'sessions', 'consents', 'users']);

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}

function sequentialScans(node: PlanNode): string[] {
  const own = node['Node Type'] === 'Seq Scan' && node['Relation Name'] ? [node['Relation Name']] : [];
  return [...own, ...(node.Plans ?? []).flatMap(sequentialScans)];
}

describe('statements per code flow (recorded SQL)', () => {
  let t: TestApp;
  let browser: Browser;

  beforeAll(async () => {
    t = await createTestApp(NO_RATE_LIMITS);
    ({ browser } = await signedIn(t));
  });
  afterAll(() => t.close());

  it(`authorize + token with a trusted client: ${FLOW.statements} statements in ${FLOW.units} units`, async () => {
    const client = await registerClient(t, { trusted: true });
    await issueTokens(t, { client, browser }); // warms the client cache, as any running instance is
    const statements = foreground(await captureQueries(t, () => issueTokens(t, { client, browser })));
    expect(shape(statements), statements.join('\n')).toEqual(FLOW);
  });

  it(`authorize + token with a client the user already consented to: ${FLOW.statements} statements in ${FLOW.units} units`, async () => {
    const client = await registerClient(t, { trusted: false, scope: 'users:read orders:read' });
    await issueTokens(t, { client, browser, scope: 'users:read' }); // consents (the page is answered once)
    const statements = foreground(await captureQueries(t, () => issueTokens(t, { client, browser, scope: 'users:read' })));
    expect(shape(statements), statements.join('\n')).toEqual(FLOW);
  });

  it(`a refresh with rotation: ${REFRESH.statements} statements in ${REFRESH.units} units`, async () => {
    const client = await registerClient(t, { trusted: true });
    const { refresh } = await issueTokens(t, { client, browser });
    let answer: Awaited<ReturnType<typeof token>> | undefined;
    const statements = foreground(
      await captureQueries(t, async () => {
        answer = await token(t, client, { grant_type: 'refresh_token', refresh_token: refresh });
      }),
    );
    expect(answer?.status).toBe(200);
    expect(answer?.body.refresh_token).not.toBe(refresh);
    expect(shape(statements), statements.join('\n')).toEqual(REFRESH);
  });

  /**
   * PostgreSQL caches a prepared statement's plan. On a fresh database it is made while the tables are a page or two
   * and never analyzed, and kept until autovacuum's first ANALYZE: a join it plans as a sequential scan then reads a
   * whole table on every request for a minute or more (the refresh did, with grants, until it looked the grant up
   * by key). The flow's statements, as recorded, with their generic plans on the test's fresh database.
   */
  if (POSTGRES) {
    it('the statements of the flow plan no sequential scan of a table that grows, before the first ANALYZE too', async () => {
      const trusted = await registerClient(t, { trusted: true });
      const consented = await registerClient(t, { trusted: false, scope: 'users:read orders:read' });
      await issueTokens(t, { client: trusted, browser });
      await issueTokens(t, { client: consented, browser, scope: 'users:read' });
      const recorded = await captureQueries(t, async () => {
        const { refresh } = await issueTokens(t, { client: trusted, browser });
        await issueTokens(t, { client: consented, browser, scope: 'users:read' });
        expect((await token(t, trusted, { grant_type: 'refresh_token', refresh_token: refresh })).status).toBe(200);
      });
      const statements = [...new Set(foreground(recorded))].filter((text) => !TRANSACTION_CONTROL.test(text));
      expect(statements.length).toBeGreaterThanOrEqual(FLOW.statements + REFRESH.statements - 1);

      expect(await wholeTableReads(t, statements)).toEqual([]);
    });

    it('every hot-path statement of the service plans no sequential scan of a table that grows, before the first ANALYZE too', async () => {
      for (const sort of USER_SORT_KEYS)
        for (const descending of [false, true]) for (const byGender of [false, true]) pageStatement(sort, descending, byGender);
      const texts = Statement.all()
        // A statement planned at each run (retention's batches) has no cached plan to go stale.
        .filter((statement) => !statement.options.unprepared)
        .map((statement) => statement.compile(true).text);
      expect(texts.length).toBeGreaterThan(40);
      expect(await wholeTableReads(t, texts)).toEqual([]);
    });
  }
});

/** The statements' generic plans on the app's database: each sequential scan of a table that grows, with its statement. */
async function wholeTableReads(t: TestApp, statements: string[]): Promise<string[]> {
  const runner = t.app.get(DataSource).createQueryRunner();
  await runner.connect();
  const scans: string[] = [];
  try {
    await runner.query('SET plan_cache_mode = force_generic_plan');
    for (const [i, text] of statements.entries()) {
      const parameters = new Set(text.match(/\$\d+/g) ?? []).size;
      await runner.query(`PREPARE plan_check_${i} AS ${text}`);
      const args = parameters ? `(${Array(parameters).fill('NULL').join(', ')})` : '';
      const [{ 'QUERY PLAN': plan }] = (await runner.query(`EXPLAIN (FORMAT JSON) EXECUTE plan_check_${i}${args}`)) as Array<{
        'QUERY PLAN': Array<{ Plan: PlanNode }>;
      }>;
      for (const table of sequentialScans(plan[0].Plan)) if (GROWING.has(table)) scans.push(`${table} in: ${text}`);
    }
  } finally {
    // Only what this check prepared: the connection goes back to the pool with node-postgres' statements intact.
    for (const i of statements.keys()) await runner.query(`DEALLOCATE plan_check_${i}`).catch(() => undefined);
    await runner.query('RESET plan_cache_mode');
    await runner.release();
  }
  return scans;
}
