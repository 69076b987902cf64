import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { type Server, createServer } from 'node:http';
import Provider from 'oidc-provider';

/** A person the upstream provider knows: their subject and the claims it releases (email, name, ...). */
export type UpstreamAccount = { sub: string } & Record<string, unknown>;

/**
 * A real OpenID Connect provider (panva's oidc-provider, certified) on a free port of 127.0.0.1, as a company's
 * identity provider: one confidential client (this service as its relying party), people the test adds, and an
 * interaction the test drives: `signIn` signs a person in and returns where the provider sends the browser back.
 */
export class UpstreamOidc {
  readonly accounts = new Map<string, UpstreamAccount>();
  readonly clientId = `corp-${randomBytes(4).toString('hex')}`;
  readonly clientSecret = randomBytes(24).toString('base64url');
  issuer = '';
  private server: Server | undefined;
  /** The `amr` of the next sign-ins (e.g. ['pwd', 'mfa']). */
  amr: string[] = ['pwd'];

  constructor(private readonly redirectUri: string) {}

  async start(): Promise<void> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.issuer = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    const key = {
      ...generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' }),
      kid: 'k1',
      use: 'sig',
      alg: 'RS256',
    };
    const provider = new Provider(this.issuer, {
      clients: [
        {
          client_id: this.clientId,
          client_secret: this.clientSecret,
          redirect_uris: [this.redirectUri],
          response_types: ['code'],
          grant_types: ['authorization_code'],
        },
      ],
      jwks: { keys: [key] },
      cookies: { keys: [randomBytes(32).toString('base64url')] },
      claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name', 'gender', 'birthdate', 'groups'], amr: null },
      // Claims in the ID token, as Entra ID, Okta and Google put the e-mail there.
      conformIdTokenClaims: false,
      features: { devInteractions: { enabled: false } },
      findAccount: (_ctx, sub) => {
        const account = this.accounts.get(sub);
        return account ? { accountId: sub, claims: () => ({ ...account }) } : undefined;
      },
      loadExistingGrant: async (ctx) => {
        const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client!.clientId, accountId: ctx.oidc.session!.accountId! });
        grant.addOIDCScope('openid email profile');
        await grant.save();
        return grant;
      },
      interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
      renderError: (ctx, out) => {
        ctx.type = 'text/plain';
        ctx.body = `${out.error}: ${out.error_description ?? ''}`;
      },
    });
    const callback = provider.callback();
    server.on('request', (req, res) => {
      const signIn = /^\/interaction\/([\w-]+)\/as\/([\w-]+)$/.exec(req.url ?? '');
      if (!signIn) return void callback(req, res);
      void provider
        .interactionFinished(req, res, { login: { accountId: signIn[2], amr: this.amr } }, { mergeWithLastSubmission: false })
        .catch(() => res.writeHead(400).end('interaction expired'));
    });
    this.server = server;
  }

  /**
   * A browser's visit to `authorizationUrl` (this provider's), signing in as `sub`: the URL the provider sends the
   * browser back to (this service's callback with `code`, `state` and `iss`), or its error page's text.
   */
  async signIn(authorizationUrl: string, sub: string): Promise<URL> {
    const cookies = new Map<string, string>();
    let url = new URL(authorizationUrl);
    for (let hop = 0; hop < 10; hop++) {
      if (url.origin !== this.issuer) return url;
      const interaction = /^\/interaction\/([\w-]+)$/.exec(url.pathname);
      if (interaction) url = new URL(`/interaction/${interaction[1]}/as/${sub}`, this.issuer);
      const res = await fetch(url, { redirect: 'manual', headers: { cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; ') } });
      for (const line of res.headers.getSetCookie()) {
        const [pair] = line.split(';');
        const eq = pair.indexOf('=');
        cookies.set(pair.slice(0, eq), pair.slice(eq + 1));
      }
      const location = res.headers.get('location');
      if (!location) throw new Error(`the provider answered ${res.status}: ${await res.text()}`);
      url = new URL(location, url);
    }
    throw new Error('too many redirects at the provider');
  }

  close(): Promise<void> {
    return new Promise((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
