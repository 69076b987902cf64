import { Injectable } from '@nestjs/common';
import type { Response } from 'express';

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

const STYLE = `
:root{color-scheme:light dark;--fg:#1b1f24;--muted:#57606a;--bg:#f6f8fa;--card:#fff;--line:#d0d7de;--accent:#0b5fff;--danger:#b42318}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--muted:#9da7b3;--bg:#0d1117;--card:#161b22;--line:#30363d;--accent:#4c8dff;--danger:#ff7b72}}
*{box-sizing:border-box}body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:var(--bg);color:var(--fg)}
main{max-width:26rem;margin:0 auto;padding:2rem 1rem}
.card{background:var(--card);border:1px solid var(--line);border-radius:12px;padding:1.5rem}
h1{font-size:1.35rem;margin:0 0 .25rem}p.lead{color:var(--muted);margin:0 0 1.25rem}
label{display:block;font-weight:600;margin:.75rem 0 .25rem}
input[type=email],input[type=password],input[type=text]{width:100%;padding:.65rem .75rem;font:inherit;border:1px solid var(--line);border-radius:8px;background:transparent;color:inherit}
input:focus,button:focus{outline:3px solid color-mix(in srgb,var(--accent) 40%,transparent);outline-offset:1px}
button{font:inherit;font-weight:600;padding:.7rem 1rem;border-radius:8px;border:1px solid var(--accent);background:var(--accent);color:#fff;cursor:pointer;width:100%;margin-top:1.25rem}
button.secondary{background:transparent;color:var(--fg);border-color:var(--line)}
.actions{display:flex;flex-wrap:wrap;gap:0 .75rem}.actions button{flex:1 1 0;min-width:max-content}
.error{color:var(--danger);border:1px solid var(--danger);border-radius:8px;padding:.6rem .75rem;margin:0 0 1rem}
ul.scopes{padding-left:1.1rem;margin:.5rem 0 0}ul.scopes li{margin:.35rem 0}p.granted{margin:1.25rem 0 0}ul.granted{color:var(--muted)}code{font-size:.9em;word-break:break-all}
footer{color:var(--muted);font-size:.85rem;text-align:center;margin-top:1rem}
.apps{list-style:none;padding:0;margin:0}.apps>li{margin:0 0 1rem}
h2{font-size:1.1rem;margin:0;overflow-wrap:anywhere}
dl.when{display:grid;grid-template-columns:auto 1fr;gap:.15rem .75rem;margin:1rem 0 0;color:var(--muted);font-size:.9rem}dl.when dd{margin:0}
button.danger{background:transparent;color:var(--danger);border-color:var(--danger)}
a{color:var(--accent)}p.lead:last-child{margin-bottom:0}
figure.qr{margin:0 auto 1rem;max-width:14rem;background:#fff;padding:.5rem;border-radius:8px}figure.qr svg{display:block;width:100%;height:auto}
main>.card+.card{margin-top:1rem}h3{font-size:1rem;margin:0;overflow-wrap:anywhere}
ul.passkeys{list-style:none;padding:0;margin:0 0 1rem}ul.passkeys>li{border-top:1px solid var(--line);padding:1rem 0}
ul.codes{display:grid;grid-template-columns:1fr 1fr;gap:.35rem 1rem;list-style:none;padding:0;margin:0 0 1.25rem;font-size:1.05rem}
`;

/**
 * Sends a page of the authorization server with the headers every such page needs, whatever its content: not
 * frameable, no referrer, no external assets, never cached.
 */
/**
 * A redirect to an absolute URL built with the URL API (so already percent-encoded), with an empty body. Express's
 * `res.redirect` also negotiates an HTML or text body from the Accept header on every call, which a client that
 * follows the Location header does not read.
 */
export function sendRedirect(res: Response, status: 302 | 303, location: string): void {
  res.statusCode = status;
  res.setHeader('Location', location);
  res.setHeader('Content-Length', '0');
  res.end();
}

export function sendHtml(res: Response, status: number, html: string): void {
  res.status(status);
  res.setHeader('Content-Type', 'text/html; charset=utf-8');
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Pragma', 'no-cache');
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.setHeader('X-Frame-Options', 'DENY');
  res.setHeader(
    'Content-Security-Policy',
    "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'unsafe-inline'; img-src 'self' data:; base-uri 'none'; frame-ancestors 'none'",
  );
  res.send(html);
}

function hidden(name: string, value: string | undefined): string {
  return value === undefined ? '' : `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`;
}

export interface LoginPageView {
  returnTo: string;
  csrf: string;
  /** A generic failure message after wrong credentials. */
  error?: string;
  email?: string;
}

export interface ConsentPageView {
  clientName: string;
  /** The scopes the person is asked for: new to this client, or all the request names with prompt=consent. */
  scopes: { name: string; description: string }[];
  /** Scopes of the request the person allowed this client before (step-up): named, not asked again. */
  alreadyAllowed?: { name: string; description: string }[];
  csrf: string;
  /** The authorization request's parameters, carried back as hidden fields. */
  params: Record<string, string | undefined>;
  /**
   * A client identified by the URL of its own metadata document (not registered here): the host serving that
   * document, the host the browser goes back to, and whether every redirect URI it has is on the person's own
   * machine (localhost or a loopback address).
   */
  metadataDocument?: { documentHost: string; redirectHost: string; loopbackOnly: boolean };
}

export interface LogoutPageView {
  /** The client that asked for the logout, if it is known. */
  clientName: string | null;
  csrf: string;
  /** The logout request's parameters, carried back as hidden fields. */
  params: Record<string, string | undefined>;
}

export interface ConnectedAppView {
  clientId: string;
  name: string;
  scopes: { name: string; description: string }[];
  /** Epoch ms. */
  grantedAt: number;
  /** Epoch ms; null when no grant of the app is in force (only the consent is). */
  lastUsedAt: number | null;
}

export interface ConnectedAppsPageView {
  apps: ConnectedAppView[];
  csrf: string;
}

/**
 * The second step of a sign-in: the form for a code of the person's authenticator or a recovery code (`totp`), the
 * button to use one of their passkeys (`passkey`), or both.
 */
export interface SecondFactorPageView {
  csrf: string;
  totp: boolean;
  passkey: boolean;
  /**
   * A signed-in person whose sign-in is too old for the request (`max_age`) confirms it is them with a passkey (the
   * form posts `step=reauth` and `return_to`), not a second factor after a password.
   */
  reauthenticate?: { returnTo: string };
  error?: string;
}

/** A passkey as the account page lists it. */
export interface PasskeyItemView {
  id: string;
  name: string;
  /** Epoch ms. */
  createdAt: number;
  lastUsedAt: number | null;
  /** Synced between the person's devices (a password manager, a platform account), or bound to one authenticator. */
  deviceType: 'singleDevice' | 'multiDevice';
}

/** At sign-in, for a person whose role needs a second factor and who has none: the authenticator to set up. */
export interface SignInEnrolmentPageView {
  csrf: string;
  qrSvg: string;
  secret: string;
  error?: string;
}

/** The account's security page: the authenticator's state and what can be done with it. */
export interface AccountSecurityPageView {
  csrf: string;
  totp: 'none' | 'pending' | 'active';
  recoveryCodesLeft: number;
  /** While setting up an authenticator: the QR code (an SVG element) and the secret to type instead. */
  enrolment?: { qrSvg: string; secret: string };
  /** Right after the authenticator is confirmed: the recovery codes, shown this once. */
  recoveryCodes?: string[];
  passkeys: PasskeyItemView[];
  /**
   * A password-only session of a person who has a factor: the link to confirm it is them (step-up), which adding
   * or removing a factor needs first.
   */
  confirmFirst?: string;
  error?: string;
}

/** The page where a person enters the code a device shows them (RFC 8628 3.3). */
export interface DeviceCodePageView {
  csrf: string;
  /** The code as typed, shown again with an error. */
  userCode?: string;
  error?: string;
}

/** The device's request, for the person to allow or deny; the code is shown to compare with the device's. */
export interface DeviceConsentPageView {
  csrf: string;
  clientName: string;
  userCode: string;
  scopes: { name: string; description: string }[];
}

/** The browser part of @simplewebauthn, then the script that drives the passkey forms (both served here). */
const PASSKEY_SCRIPTS = '\n<script src="/assets/webauthn.js"></script><script src="/assets/passkeys.js"></script>';

/** A point in time for people, in UTC (the same for every reader: no script turns it into local time). */
function timeElement(ms: number): string {
  const iso = new Date(ms).toISOString();
  return `<time datetime="${iso}">${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC</time>`;
}

/**
 * The HTML of the login, consent, logout, connected-apps and error pages. A team rebrands them with a subclass registered through
 * `CustomPagesModule.use(...)` (see docs/pages.md); the form fields and the security headers stay
 * the same.
 */
@Injectable()
export class OAuthPages {
  /** The sign-in form: posts `email`, `password`, `return_to` and `csrf` to `/login`. */
  login(opts: LoginPageView): string {
    return this.document(
      'Sign in',
      `<div class="card">
<h1>Sign in</h1><p class="lead">Use your account to continue.</p>
${opts.error ? `<p class="error" role="alert">${escapeHtml(opts.error)}</p>` : ''}
<form method="post" action="/login">
${hidden('return_to', opts.returnTo)}${hidden('csrf', opts.csrf)}
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="username" required maxlength="254" value="${escapeHtml(opts.email ?? '')}" autofocus>
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required maxlength="128">
<button type="submit">Sign in</button>
</form>
${this.passkeyForm('sign-in', opts.csrf, 'Use a passkey', hidden('return_to', opts.returnTo))}</div>${PASSKEY_SCRIPTS}`,
    );
  }

  /**
   * A form that a passkey fills: hidden until the page's script finds WebAuthn in the browser; on submit the script
   * asks `/login/passkey/options` (or the account page's) for a challenge, has the browser use a passkey, and posts
   * the answer as `response` with `csrf` (and `step`: `sign-in`, `second-factor` or `register`).
   */
  protected passkeyForm(step: 'sign-in' | 'second-factor' | 'reauth' | 'register', csrf: string, label: string, extra = ''): string {
    const register = step === 'register';
    const action = register ? '/account/security/passkeys' : '/login/passkey';
    const options = register ? '/account/security/passkeys/options' : '/login/passkey/options';
    const name = register
      ? `<label for="passkey-name">Name of the passkey</label>
<input id="passkey-name" name="name" type="text" maxlength="64" placeholder="e.g. Work laptop">`
      : '';
    return `<form method="post" action="${action}" data-passkey="${step}" data-options="${options}" hidden>
${hidden('csrf', csrf)}${hidden('step', step)}${hidden('response', '')}${extra}${name}
<button type="submit"${register ? '' : ' class="secondary"'}>${escapeHtml(label)}</button>
<p class="lead" role="status" data-passkey-status></p>
</form>`;
  }

  /** The consent form: posts the request's parameters, `csrf` and `decision=allow|deny` to `/authorize/consent`. */
  consent(opts: ConsentPageView): string {
    const list = (scopes: { name: string; description: string }[]) =>
      scopes.map((s) => `<li><strong>${escapeHtml(s.description)}</strong><br><code>${escapeHtml(s.name)}</code></li>`).join('');
    const fields = Object.entries(opts.params)
      .map(([k, v]) => hidden(k, v))
      .join('');
    const name = escapeHtml(opts.clientName);
    const before = opts.alreadyAllowed ?? [];
    const asked = before.length
      ? `<h1>${name} wants more access to your account</h1>
${this.unregisteredClient(opts)}<p class="lead">If you allow it, <strong>${name}</strong> will also be able to:</p>
<ul class="scopes">${list(opts.scopes)}</ul>
<p class="lead granted">You allowed it before to:</p>
<ul class="scopes granted">${list(before)}</ul>`
      : `<h1>${name} wants access to your account</h1>
${this.unregisteredClient(opts)}<p class="lead">If you allow it, <strong>${name}</strong> will be able to:</p>
<ul class="scopes">${list(opts.scopes)}</ul>`;
    return this.document(
      `Allow ${opts.clientName}?`,
      `<div class="card">
${asked}
<form method="post" action="/authorize/consent">
${fields}${hidden('csrf', opts.csrf)}
<div class="actions">
<button type="submit" name="decision" value="deny" class="secondary">Deny</button>
<button type="submit" name="decision" value="allow">Allow</button>
</div>
</form></div>
<footer>You can revoke this access at any time.</footer>`,
    );
  }

  /** The user-code form: posts `user_code` and `csrf` to `/device`. */
  deviceCode(opts: DeviceCodePageView): string {
    return this.document(
      'Connect a device',
      `<div class="card">
<h1>Connect a device</h1><p class="lead">Enter the code your device shows.</p>
${opts.error ? `<p class="error" role="alert">${escapeHtml(opts.error)}</p>` : ''}
<form method="post" action="/device">
${hidden('csrf', opts.csrf)}
<label for="user_code">Code</label>
<input id="user_code" name="user_code" type="text" autocomplete="off" autocapitalize="characters" spellcheck="false" required maxlength="16" placeholder="BCDF-GHJK" value="${escapeHtml(opts.userCode ?? '')}" autofocus>
<button type="submit">Continue</button>
</form></div>`,
    );
  }

  /** The device's request: posts `user_code`, `csrf` and `decision=allow|deny` to `/device/decision`. */
  deviceConsent(opts: DeviceConsentPageView): string {
    const name = escapeHtml(opts.clientName);
    const scopes = opts.scopes
      .map((s) => `<li><strong>${escapeHtml(s.description)}</strong><br><code>${escapeHtml(s.name)}</code></li>`)
      .join('');
    return this.document(
      `Allow ${opts.clientName} on your device?`,
      `<div class="card">
<h1>${name} wants access to your account on a device</h1>
<p class="lead">Continue only if your device shows this code: <strong>${escapeHtml(opts.userCode)}</strong>. If you did not start this yourself, deny it.</p>
<p class="lead">If you allow it, <strong>${name}</strong> will be able to:</p>
<ul class="scopes">${scopes}</ul>
<form method="post" action="/device/decision">
${hidden('user_code', opts.userCode)}${hidden('csrf', opts.csrf)}
<div class="actions">
<button type="submit" name="decision" value="deny" class="secondary">Deny</button>
<button type="submit" name="decision" value="allow">Allow</button>
</div>
</form></div>
<footer>You can revoke this access at any time on your connected apps page.</footer>`,
    );
  }

  /** After the person's answer: back to the device. */
  deviceDone(allowed: boolean): string {
    const title = allowed ? 'Device connected' : 'Request denied';
    const lead = allowed ? 'You can go back to your device: it is signed in now.' : 'The device was not given access to your account.';
    return this.document(title, `<div class="card"><h1>${title}</h1><p class="lead">${lead}</p></div>`);
  }

  /**
   * What the consent page says of a client that is not registered here but named by the URL of its metadata
   * document: who publishes that name, where the person goes back to, and a warning for an application on their own
   * machine (anyone can publish a document that names localhost).
   */
  protected unregisteredClient(opts: ConsentPageView): string {
    const about = opts.metadataDocument;
    if (!about) return '';
    const local = about.loopbackOnly
      ? `<p class="error" role="alert">This application runs on your own computer (its address is on localhost), so nothing here vouches for its name. Allow it only if you started it yourself just now.</p>
`
      : '';
    return `<p class="lead">This application is not registered here. It describes itself in a document published by <strong>${escapeHtml(about.documentHost)}</strong>; after you decide, you go back to <strong>${escapeHtml(about.redirectHost)}</strong>.</p>
${local}`;
  }

  /**
   * The applications a signed-in person has granted access: each with a form posting `client_id` and `csrf` to
   * `/account/apps/revoke`, and a sign-out form posting to `/logout`.
   */
  connectedApps(opts: ConnectedAppsPageView): string {
    const apps = opts.apps
      .map((app) => {
        const scopes = app.scopes
          .map((s) => `<li><strong>${escapeHtml(s.description)}</strong><br><code>${escapeHtml(s.name)}</code></li>`)
          .join('');
        const lastUsed = app.lastUsedAt === null ? 'no token in force' : timeElement(app.lastUsedAt);
        return `<li class="card">
<h2>${escapeHtml(app.name)}</h2>
<p class="lead">It can:</p><ul class="scopes">${scopes}</ul>
<dl class="when"><dt>Access granted</dt><dd>${timeElement(app.grantedAt)}</dd><dt>Last used</dt><dd>${lastUsed}</dd></dl>
<form method="post" action="/account/apps/revoke">
${hidden('client_id', app.clientId)}${hidden('csrf', opts.csrf)}
<button type="submit" class="danger">Revoke access</button>
</form></li>`;
      })
      .join('\n');
    const list = opts.apps.length
      ? `<ul class="apps">${apps}</ul>`
      : '<div class="card"><p class="lead">No application has access to your account.</p></div>';
    return this.document(
      'Connected apps',
      `<h1>Connected apps</h1>
<p class="lead">Applications you allowed to use your account. Revoking one signs it out at once; to come back, it has to send you through sign-in again.</p>
${list}
<form method="post" action="/logout"><button type="submit" class="secondary">Sign out</button></form>`,
    );
  }

  /** The second step of a sign-in: posts `code` and `csrf` to `/login/code`, or a passkey to `/login/passkey`. */
  secondFactor(opts: SecondFactorPageView): string {
    const lead = opts.totp
      ? 'Open your authenticator app and enter the six-digit code it shows, or one of your recovery codes.'
      : 'Confirm it is you with one of your passkeys.';
    const codeForm = opts.totp
      ? `<form method="post" action="/login/code">
${hidden('csrf', opts.csrf)}
<label for="code">Code</label>
<input id="code" name="code" type="text" inputmode="text" autocomplete="one-time-code" required maxlength="32" autofocus>
<button type="submit">Continue</button>
</form>`
      : '';
    const reauth = opts.reauthenticate;
    const passkey = !opts.passkey
      ? ''
      : reauth
        ? `\n${this.passkeyForm('reauth', opts.csrf, 'Use a passkey', hidden('return_to', reauth.returnTo))}`
        : `\n${this.passkeyForm('second-factor', opts.csrf, 'Use a passkey')}`;
    const title = reauth ? 'Confirm it is you' : opts.totp ? 'Enter your code' : 'Use your passkey';
    return this.document(
      title,
      `<div class="card">
<h1>${title}</h1><p class="lead">${reauth ? 'This needs a recent sign-in: confirm it is you with one of your passkeys.' : lead}</p>
${opts.error ? `<p class="error" role="alert">${escapeHtml(opts.error)}</p>` : ''}
${codeForm}${passkey}</div>${opts.passkey ? PASSKEY_SCRIPTS : ''}`,
    );
  }

  /**
   * The account's security page: set up an authenticator (posts to `/account/security/totp`), confirm it with a
   * first code (`/account/security/totp/confirm`, `code`), or remove it (`/account/security/totp/remove`, `code`);
   * every form posts `csrf`.
   */
  accountSecurity(opts: AccountSecurityPageView): string {
    const csrf = hidden('csrf', opts.csrf);
    const codeField = `<label for="code">Code from your app</label>
<input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" required maxlength="32">`;
    let body: string;
    if (opts.recoveryCodes) {
      body = this.recoveryCodes(opts.recoveryCodes, '/account/security');
    } else if (opts.enrolment) {
      body = this.totpEnrolment('/account/security/totp/confirm', opts.csrf, opts.enrolment);
    } else if (opts.totp === 'active') {
      body = `<p class="lead">Signing in asks for a code from your authenticator app. Recovery codes left: ${opts.recoveryCodesLeft}.</p>
<form method="post" action="/account/security/totp/remove">${csrf}${codeField}<button type="submit" class="danger">Remove the authenticator</button></form>`;
    } else {
      body = `<p class="lead">Add an authenticator app (a one-time code at every sign-in, after your password).</p>
<form method="post" action="/account/security/totp">${csrf}<button type="submit">Set up an authenticator</button></form>`;
    }
    return this.document(
      'Sign-in security',
      `<div class="card">
<h1>Sign-in security</h1>
${opts.error ? `<p class="error" role="alert">${escapeHtml(opts.error)}</p>` : ''}${opts.confirmFirst ? `<p class="lead"><a href="${escapeHtml(opts.confirmFirst)}">Confirm it is you</a> to add or remove a passkey or an authenticator.</p>\n` : ''}${body}
</div>
${opts.recoveryCodes || opts.enrolment ? '' : this.passkeyList(opts.passkeys, opts.csrf)}`,
    );
  }

  /**
   * The person's passkeys, each with a form to rename it (posts `id`, `name`, `csrf` to
   * `/account/security/passkeys/rename`) and one to remove it (`id`, `csrf` to `/account/security/passkeys/remove`),
   * and the form that adds one.
   */
  protected passkeyList(passkeys: PasskeyItemView[], csrf: string): string {
    const items = passkeys
      .map(
        (p) => `<li>
<h3>${escapeHtml(p.name)}</h3>
<dl class="when"><dt>Kind</dt><dd>${p.deviceType === 'multiDevice' ? 'synced between your devices' : 'on one device'}</dd><dt>Added</dt><dd>${timeElement(p.createdAt)}</dd><dt>Last used</dt><dd>${p.lastUsedAt === null ? 'never' : timeElement(p.lastUsedAt)}</dd></dl>
<form method="post" action="/account/security/passkeys/rename">${hidden('csrf', csrf)}${hidden('id', p.id)}<label for="name-${escapeHtml(p.id)}">New name</label>
<input id="name-${escapeHtml(p.id)}" name="name" type="text" required maxlength="64" value="${escapeHtml(p.name)}"><button type="submit" class="secondary">Rename</button></form>
<form method="post" action="/account/security/passkeys/remove">${hidden('csrf', csrf)}${hidden('id', p.id)}<button type="submit" class="danger">Remove</button></form>
</li>`,
      )
      .join('\n');
    const lead = passkeys.length
      ? 'You can sign in with any of these passkeys, without your password.'
      : 'Add a passkey to sign in with your device (fingerprint, face or PIN) instead of a password.';
    return `<div class="card">
<h2>Passkeys</h2>
<p class="lead">${lead}</p>
${passkeys.length ? `<ul class="passkeys">${items}</ul>` : ''}
${this.passkeyForm('register', csrf, 'Add a passkey')}<noscript><p class="lead">Adding a passkey needs JavaScript.</p></noscript>
</div>${PASSKEY_SCRIPTS}`;
  }

  /**
   * At sign-in, when the person's role needs a second factor and they have none: the authenticator to set up, with
   * the form for its first code (posts `code` and `csrf` to `/login/enrol`).
   */
  signInEnrolment(opts: SignInEnrolmentPageView): string {
    return this.document(
      'Set up an authenticator',
      `<div class="card">
<h1>Set up an authenticator</h1>
<p class="lead">Your account needs a second factor: a code from an authenticator app at every sign-in.</p>
${opts.error ? `<p class="error" role="alert">${escapeHtml(opts.error)}</p>` : ''}${this.totpEnrolment('/login/enrol', opts.csrf, opts)}
</div>`,
    );
  }

  /** Signed in right after setting up an authenticator: the recovery codes, shown once, and the way on. */
  signInRecoveryCodes(codes: string[], next: string): string {
    return this.document(
      'Your recovery codes',
      `<div class="card">\n<h1>Your recovery codes</h1>\n${this.recoveryCodes(codes, next)}\n</div>`,
    );
  }

  /** An authenticator to scan (or its key to type), and the form that confirms it with a first code. */
  protected totpEnrolment(action: string, csrf: string, enrolment: { qrSvg: string; secret: string }): string {
    return `<p class="lead">Scan this code with your authenticator app, or type the key below into it, then enter the code it shows.</p>
<figure class="qr">${enrolment.qrSvg}</figure>
<p class="lead">Key: <code>${escapeHtml(enrolment.secret)}</code></p>
<form method="post" action="${escapeHtml(action)}">${hidden('csrf', csrf)}<label for="code">Code from your app</label>
<input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" required maxlength="32"><button type="submit">Confirm</button></form>`;
  }

  /** The recovery codes, shown once, and a link to go on once they are saved. */
  protected recoveryCodes(codes: string[], next: string): string {
    return `<p class="lead">Your authenticator is set up: from now on, signing in asks for a code from it.</p>
<p class="lead">Keep these recovery codes somewhere safe. Each signs you in once if you lose your authenticator. They are shown only now.</p>
<ul class="codes">${codes.map((c) => `<li><code>${escapeHtml(c)}</code></li>`).join('')}</ul>
<p class="lead"><a href="${escapeHtml(next)}">I have saved them</a></p>`;
  }

  /**
   * The question before a logout that the client could not prove it may ask for (no ID token of this session):
   * posts the request's parameters, `csrf` and `decision=logout|stay` to `/end-session/confirm`.
   */
  logoutConfirm(opts: LogoutPageView): string {
    const fields = Object.entries(opts.params)
      .map(([k, v]) => hidden(k, v))
      .join('');
    const lead = opts.clientName
      ? `<strong>${escapeHtml(opts.clientName)}</strong> asks to sign you out of your account here.`
      : 'You are asked to sign out of your account here.';
    return this.document(
      'Sign out?',
      `<div class="card">
<h1>Sign out?</h1>
<p class="lead">${lead} Applications you allowed keep their access until you revoke it.</p>
<form method="post" action="/end-session/confirm">
${fields}${hidden('csrf', opts.csrf)}
<div class="actions">
<button type="submit" name="decision" value="stay" class="secondary">Stay signed in</button>
<button type="submit" name="decision" value="logout">Sign out</button>
</div>
</form></div>`,
    );
  }

  /** A page that only says what happened (signed out, still signed in). */
  notice(title: string, message: string): string {
    return this.document(title, `<div class="card"><h1>${escapeHtml(title)}</h1><p class="lead">${escapeHtml(message)}</p></div>`);
  }

  /**
   * An error the user sees instead of a redirect (a bad client or redirect URI, an expired form). With `back`, a
   * link to the page to go back to instead of the explanation for a broken authorization request.
   */
  error(title: string, message: string, back?: { href: string; label: string }): string {
    const next = back
      ? `<p class="lead"><a href="${escapeHtml(back.href)}">${escapeHtml(back.label)}</a></p>`
      : '<p class="lead">The application that sent you here is misconfigured or the link is broken. Nothing was shared.</p>';
    return this.document(
      title,
      `<div class="card"><h1>${escapeHtml(title)}</h1><p class="error" role="alert">${escapeHtml(message)}</p>
${next}</div>`,
    );
  }

  /** The HTML document around every page: inline styles only (the pages' CSP allows nothing else). */
  document(title: string, body: string): string {
    return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(title)}</title><style>${STYLE}</style></head>
<body><main>${body}</main></body></html>`;
  }
}
