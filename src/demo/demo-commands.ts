/**
 * The shell lines of the demo's code flow, as the start's block and the demo callback page show them (the README
 * repeats them): the client's secret and the PKCE verifier stay shell variables, set by the line the start prints
 * once, since the server keeps neither in clear.
 */

export interface DemoData {
  issuer: string;
  adminEmail: string;
  adminPassword: string;
  clientId: string;
  clientSecret: string;
  /** The PKCE verifier whose S256 challenge is in {@link authorizationUrl}. */
  codeVerifier: string;
  authorizationUrl: string;
  codeTtlSeconds: number;
}

/** What a code of this server looks like (base64url): only such a code goes into a line meant for a shell. */
const SHELL_SAFE_CODE = /^[A-Za-z0-9_-]{1,256}$/;

/**
 * The token request for `code` (with the code verifier): shows the whole answer, so that an error is seen, and
 * keeps the access token in ACCESS_TOKEN; undefined for a value no code of this server has.
 */
export function tokenCommand(issuer: string, code: string): string | undefined {
  if (!SHELL_SAFE_CODE.test(code)) return undefined;
  return (
    `TOKENS=$(curl -s -u "$CLIENT_ID:$CLIENT_SECRET" -d grant_type=authorization_code -d code=${code} ` +
    `-d code_verifier="$CODE_VERIFIER" -d redirect_uri=${issuer}/demo/callback ${issuer}/token); ` +
    'echo "$TOKENS"; ACCESS_TOKEN=$(echo "$TOKENS" | jq -r .access_token)'
  );
}

/** A first call of the resource API with the access token the token command kept. */
export function apiCommand(issuer: string): string {
  return `curl -s -H "Authorization: Bearer $ACCESS_TOKEN" ${issuer}/api/resource`;
}

/** What a newcomer does next with the demo data: shown once, on the first start with an empty database (never in production). */
export function demoBlock(demo: DemoData): string {
  return (
    [
      '',
      'Demo data created (shown only once):',
      `  admin login:  ${demo.adminEmail} / ${demo.adminPassword}`,
      '  1. paste into the shell you will use (the client and the PKCE code verifier):',
      `     CLIENT_ID=${demo.clientId} CLIENT_SECRET=${demo.clientSecret} CODE_VERIFIER=${demo.codeVerifier}`,
      '  2. open in a browser, sign in as the admin and allow the demo client:',
      `     ${demo.authorizationUrl}`,
      `  3. the callback page shows this line with the code filled in; run it within ${demo.codeTtlSeconds} s:`,
      `     ${tokenCommand(demo.issuer, 'CODE')}`,
      '  4. call the API with the access token:',
      `     ${apiCommand(demo.issuer)}`,
      '',
    ].join('\n') + '\n'
  );
}
