import { Injectable } from '@nestjs/common';
import { escapeHtml, hidden, timeElement, PASSKEY_SCRIPTS } from './pages/page-html';
import type { ConnectedAppsPageView, PasskeyItemView, AccountSecurityPageView } from './pages/page-views';
import { ConsentPages } from './pages/consent-pages';

export * from './pages/page-html';
export * from './pages/page-views';

/**
 * The HTML of the login, consent, logout, connected-apps and error pages, one group of pages a file (`pages/`). A team rebrands them with a subclass registered through
 * `CustomPagesModule.use(...)` (see docs/pages.md); the form fields and the security headers stay
 * the same.
 */
@Injectable()
export class OAuthPages extends ConsentPages {
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
    return this.accountPage(
      'Connected apps',
      '/account/apps',
      opts,
      `<h1>Connected apps</h1>
<p class="lead">Applications you allowed to use your account. Revoking one signs it out at once; to come back, it has to send you through sign-in again.</p>
${list}`,
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
    return this.accountPage(
      'Sign-in security',
      '/account/security',
      opts,
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
}
