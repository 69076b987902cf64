import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser, NO_RATE_LIMITS, issueTokens, registerClient, signedIn, token } from '../support/oauth';
import { type CapturedQuery, captureQueries } from '../support/queries';
import { type TestApp, createTestApp } from '../support/test-app';

/**
 * The statements each step of the code flow sends to the database, recorded from the real data source. The
 * budget is what keeps the flow fast on PostgreSQL, where every statement is a round trip: authorize + token
 * in at most 6 (the contract's bar), a refresh in at most 3 — their audit events (code issued, code redeemed,
 * refresh rotated) included, which go in the statements of the writes they describe. What the service does is
 * less, and pinned here so that a regression shows: on PostgreSQL authorize + token take 2 for a trusted client
 * (the session checked and the grant, code and event written together; the code consumed and the refresh token
 * and event stored together) and 3 for a client with consent (the session and the consent read together first),
 * a refresh 1; on SQLite, where a statement is a function call, 4 (session read; grant, code and event through
 * one view; code consumed; refresh token and event through one view) and 3.
 */
const FLOW_BUDGET = 6;
const REFRESH_BUDGET = 3;
const POSTGRES = Boolean(process.env.TEST_DATABASE_URL);
const TRUSTED_FLOW_STATEMENTS = POSTGRES ? 2 : 4;
const CONSENTED_FLOW_STATEMENTS = POSTGRES ? 3 : 4;
const REFRESH_STATEMENTS = POSTGRES ? 1 : 3;

/** Statements of the background jobs (revoked-grant sync, signing-key reload) that may run meanwhile. */
const BACKGROUND = /\b(revoked_grants|signing_keys)\b/i;

function foreground(queries: CapturedQuery[]): string[] {
  return queries.map((q) => q.sql).filter((text) => !BACKGROUND.test(text));
}

describe('statements per code flow (recorded SQL)', () => {
  let t: TestApp;
  let browser: Browser;

  beforeAll(async () => {
    t = await createTestApp(NO_RATE_LIMITS);
    ({ browser } = await signedIn(t));
  });
  afterAll(() => t.close());

  it(`authorize + token with a trusted client: at most ${FLOW_BUDGET} statements`, async () => {
    const client = await registerClient(t, { trusted: true });
    await issueTokens(t, { client, browser }); // warms the client cache, as any running instance is
    const statements = foreground(await captureQueries(t, () => issueTokens(t, { client, browser })));
    expect(statements.length, statements.join('\n')).toBeLessThanOrEqual(FLOW_BUDGET);
    expect(statements, statements.join('\n')).toHaveLength(TRUSTED_FLOW_STATEMENTS);
    // Nothing on this path goes through the ORM's transactions.
    expect(statements.filter((s) => /^(START TRANSACTION|BEGIN|COMMIT)/i.test(s))).toEqual([]);
  });

  it(`authorize + token with a client the user already consented to: at most ${FLOW_BUDGET} statements`, async () => {
    const client = await registerClient(t, { trusted: false, scope: 'users:read orders:read' });
    await issueTokens(t, { client, browser, scope: 'users:read' }); // consents (the page is answered once)
    const statements = foreground(await captureQueries(t, () => issueTokens(t, { client, browser, scope: 'users:read' })));
    expect(statements.length, statements.join('\n')).toBeLessThanOrEqual(FLOW_BUDGET);
    expect(statements, statements.join('\n')).toHaveLength(CONSENTED_FLOW_STATEMENTS);
  });

  it(`a refresh with rotation: at most ${REFRESH_BUDGET} statements`, async () => {
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
    expect(statements.length, statements.join('\n')).toBeLessThanOrEqual(REFRESH_BUDGET);
    expect(statements, statements.join('\n')).toHaveLength(REFRESH_STATEMENTS);
  });
});
