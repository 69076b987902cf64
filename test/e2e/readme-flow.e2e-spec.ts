import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scopeRole } from '../../src/auth/scopes';
import { parseForms } from '../support/oauth';
import { ALL_SCOPES } from '../support/test-app';
import { ROOT, type RunningService, buildOnce, startService, tempSqliteUrl } from '../support/service-process';

/**
 * The README's "Try the whole flow", as a newcomer follows it on a fresh clone: the built service's first start
 * on an empty database, the printed URL opened as a browser would, and the README's bash blocks run with bash,
 * curl and jq, filled in from what the start printed and the callback page showed.
 */

/** The bash blocks of the README's "Try the whole flow", in order, as written (list indentation removed). */
function readmeFlowBlocks(): string[] {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('Try the whole flow'), readme.indexOf('The OpenAPI description is at'));
  return [...section.matchAll(/```bash\n([\s\S]*?)```/g)].map(([, body]) => body.replace(/^ {3}/gm, '').trim());
}

/** A browser's cookie jar and redirects over fetch: enough for the login and consent pages. */
class CookieBrowser {
  private readonly jar = new Map<string, string>();

  private async fetch(url: string, init: RequestInit = {}): Promise<Response> {
    const cookie = [...this.jar].map(([name, value]) => `${name}=${value}`).join('; ');
    const res = await fetch(url, { ...init, redirect: 'manual', headers: { ...(init.headers as Record<string, string>), cookie } });
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attributes] = line.split(';');
      const [name, value] = [pair.slice(0, pair.indexOf('=')).trim(), pair.slice(pair.indexOf('=') + 1).trim()];
      if (value === '' || attributes.some((a) => /^\s*max-age=0\s*$/i.test(a))) this.jar.delete(name);
      else this.jar.set(name, value);
    }
    return res;
  }

  /** Follows redirects from `res` (fetched at `url`) to the page they end on. */
  private async follow(url: string, res: Response): Promise<{ url: string; status: number; html: string }> {
    while (res.status === 302 || res.status === 303) {
      url = new URL(res.headers.get('location')!, url).toString();
      res = await this.fetch(url);
    }
    return { url, status: res.status, html: await res.text() };
  }

  async open(url: string) {
    return this.follow(url, await this.fetch(url));
  }

  /** Submits the page's form that has `field` (a submit button's name counts), with its hidden fields and `fields`. */
  async submit(page: { url: string; html: string }, field: string, fields: Record<string, string>) {
    const form = parseForms(page.html).find((f) => field in f.inputs || f.buttons.some((b) => b.name === field));
    if (!form) throw new Error(`no form with ${field} on ${page.url}:\n${page.html.slice(0, 500)}`);
    const action = new URL(form.action ?? page.url, page.url).toString();
    const body = new URLSearchParams({ ...form.hidden, ...fields });
    const headers = { 'content-type': 'application/x-www-form-urlencoded' };
    return this.follow(action, await this.fetch(action, { method: 'POST', headers, body }));
  }
}

/** Runs `script` with bash, as a person pastes it into a shell. */
function runBash(script: string): { status: number | null; stdout: string; stderr: string } {
  return spawnSync('bash', ['-c', script], { env: { PATH: process.env.PATH ?? '', CALLS: calls }, encoding: 'utf8' });
}

const unescapeHtml = (value: string) =>
  value.replace(/&(amp|lt|gt|quot|#39);/g, (e) => ({ '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#39;': "'" })[e]!);

/** Where the test's curl wrapper records each call. */
const calls = mkdtempSync(join(tmpdir(), 'readme-flow-'));

describe("the README's flow from a fresh start", () => {
  let svc: RunningService;
  let port: number;
  const db = tempSqliteUrl();

  beforeAll(async () => {
    buildOnce();
    // ISSUER unset, as on a fresh clone: the issuer is http://localhost:<PORT>, the README's with another port.
    svc = await startService({ DATABASE_URL: db.url, LOG_LEVEL: 'silent', ISSUER: '' });
    port = Number(new URL(svc.baseUrl).port);
  });
  afterAll(async () => {
    svc.child.kill('SIGTERM');
    await svc.exit;
    db.remove();
    rmSync(calls, { recursive: true, force: true });
  });

  it('signs in through the printed PKCE URL, the README commands trade the code and call the API, and the URL opened again gives a new code', async () => {
    for (const tool of ['bash', 'curl', 'jq']) {
      expect(spawnSync('sh', ['-c', `command -v ${tool}`]).status, `${tool} is needed (the README's flow uses it)`).toBe(0);
    }
    const issuer = `http://localhost:${port}`;
    const forPort = (text: string) => text.replaceAll('http://localhost:3000', issuer);
    const [variablesBlock, tokenBlock, apiBlock, ...more] = readmeFlowBlocks();
    expect(more).toEqual([]);

    // What the start printed: the admin's password, the line of variables and the authorization URL.
    const output = svc.output();
    const password = /admin login:\s+admin@example\.com \/ (\S+)/.exec(output)![1];
    const printedVariables = /^ {5}(CLIENT_ID=.*)$/m.exec(output)![1];
    const values = /^CLIENT_ID=(\S+) CLIENT_SECRET=(\S+) CODE_VERIFIER=(\S+)$/.exec(printedVariables)!.slice(1);
    let filled = 0;
    const variables = variablesBlock.replaceAll('...', () => values[filled++]);
    expect(variables).toBe(printedVariables);
    const authorizationUrl = /^ {5}(http:\/\/localhost:\d+\/authorize\?\S+)$/m.exec(output)![1];
    const request = new URL(authorizationUrl).searchParams;
    expect(request.get('redirect_uri')).toBe(`${issuer}/demo/callback`);
    expect(request.get('code_challenge_method')).toBe('S256');
    expect(request.get('code_challenge')).toBe(createHash('sha256').update(values[2]).digest('base64url'));
    expect(request.get('scope')).toBe(ALL_SCOPES.join(' '));
    const state = request.get('state')!;
    expect(state).toMatch(/^[\w-]{16}$/);

    // The browser: the URL, the login form (with its CSRF field), the consent page, the callback page.
    const browser = new CookieBrowser();
    const loginPage = await browser.open(authorizationUrl);
    expect(new URL(loginPage.url).pathname).toBe('/login');
    const consentPage = await browser.submit(loginPage, 'password', { email: 'admin@example.com', password });
    expect(consentPage.status).toBe(200);
    expect(consentPage.html).toContain('Demo Client');
    const callback = await browser.submit(consentPage, 'decision', { decision: 'allow' });
    expect(callback.status).toBe(200);
    const answer = new URL(callback.url);
    expect(`${answer.origin}${answer.pathname}`).toBe(`${issuer}/demo/callback`);
    expect(answer.searchParams.get('state')).toBe(state);
    const code = answer.searchParams.get('code')!;
    const shown = unescapeHtml(/<code id="token-command">([^<]*)<\/code>/.exec(callback.html)![1]);
    expect(callback.html).toContain('within 60 seconds');

    // The README's token command with this code is the line the callback page shows.
    const tokenCommand = forPort(tokenBlock).replace(/\bcode=CODE\b/, `code=${code}`);
    expect(tokenCommand.replace(/ \\\n\s*/g, ' ')).toBe(shown);

    // The README's blocks as written, run by bash; a wrapper records each curl call's headers and body, in order,
    // and passes its output on unchanged.
    writeFileSync(join(calls, 'count'), '0');
    const script = [
      'set -euo pipefail',
      'curl() { local n; n=$(( $(cat "$CALLS/count") + 1 )); echo "$n" > "$CALLS/count"; command curl -q -D "$CALLS/$n.headers" "$@" | tee "$CALLS/$n.body"; }',
      variables,
      tokenCommand,
      forPort(apiBlock),
      'printf %s "$ACCESS_TOKEN" > "$CALLS/access_token"',
    ].join('\n');
    const run = runBash(script);
    expect(run.status, run.stderr).toBe(0);
    const call = (n: number) => {
      const headers = readFileSync(join(calls, `${n}.headers`), 'utf8');
      return {
        status: Number(/^HTTP\/[\d.]+ (\d{3})/.exec(headers)![1]),
        contentType: /^content-type: (.*)\r$/im.exec(headers)![1],
        body: readFileSync(join(calls, `${n}.body`), 'utf8'),
      };
    };
    expect(readFileSync(join(calls, 'count'), 'utf8').trim()).toBe('3');
    const [token, resource, users] = [call(1), call(2), call(3)];

    // The demo client is given every scope bound to no role: the URL's others are left out.
    const granted = ALL_SCOPES.filter((scope) => scopeRole(scope) === undefined).join(' ');

    // The token response is shown; ACCESS_TOKEN keeps its access token.
    expect(token.status).toBe(200);
    expect(token.contentType).toBe('application/json; charset=utf-8');
    const tokens = JSON.parse(token.body) as Record<string, unknown>;
    expect(tokens).toEqual({
      access_token: expect.stringMatching(/^[\w-]+\.[\w-]+\.[\w-]+$/),
      token_type: 'Bearer',
      expires_in: 900,
      refresh_token: expect.stringMatching(/^[\w-]{43}$/),
      scope: granted,
      id_token: expect.stringMatching(/^[\w-]+\.[\w-]+\.[\w-]+$/),
    });
    expect(readFileSync(join(calls, 'access_token'), 'utf8')).toBe(tokens.access_token);

    // What the person sees: the token response, then the API calls' answers.
    expect(run.stdout).toBe(`${token.body}\n${resource.body}${users.body}`);
    expect(resource.status).toBe(200);
    expect(resource.contentType).toBe('application/json; charset=utf-8');
    expect(JSON.parse(resource.body)).toEqual({
      data: {
        sub: expect.stringMatching(/^[0-9a-f-]{36}$/),
        client_id: values[0],
        scope: granted,
        message: 'You have accessed a protected resource.',
      },
    });
    expect(users.status).toBe(200);
    expect(users.contentType).toBe('application/json; charset=utf-8');
    const list = JSON.parse(users.body) as { data: { age: number }[]; page: unknown };
    // The admin and 36 sample people, the first page of 20.
    expect(list.page).toEqual({ limit: 20, offset: 0, total: 37 });
    expect(list.data).toHaveLength(20);
    const ages = list.data.map((u) => u.age);
    expect(ages).toEqual([...ages].sort((a, b) => b - a));

    // A code works once; the URL opened again gives another (consent is remembered), traded with the same verifier.
    const again = await browser.open(authorizationUrl);
    expect(new URL(again.url).pathname).toBe('/demo/callback');
    const next = new URL(again.url).searchParams.get('code')!;
    expect(next).not.toBe(code);
    const line = unescapeHtml(/<code id="token-command">([^<]*)<\/code>/.exec(again.html)![1]);
    expect(line).toBe(shown.replace(`code=${code}`, `code=${next}`));
    const rerun = runBash([variables, line, 'printf %s "$ACCESS_TOKEN"'].join('\n'));
    expect(rerun.status, rerun.stderr).toBe(0);
    const [shownAgain, kept] = rerun.stdout.split('\n');
    const renewed = JSON.parse(shownAgain) as Record<string, unknown>;
    expect(Object.keys(renewed).sort()).toEqual(['access_token', 'expires_in', 'id_token', 'refresh_token', 'scope', 'token_type']);
    expect(kept).toBe(renewed.access_token);
  });
});
