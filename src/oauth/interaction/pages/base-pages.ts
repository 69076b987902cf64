import { escapeHtml, hidden, STYLE } from './page-html';
import type { AccountFrameView } from './page-views';

/**
 * The document around every page and the parts several pages share (the passkey form, an authenticator to set up,
 * recovery codes, notices and errors). `OAuthPages` is this class and the page groups that extend it, one file each.
 */
export abstract class BasePages {
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
   * The frame of the account pages: who is signed in and the links between the pages on top (no form there: a
   * page's own form comes first), the sign-out form at the bottom.
   */
  protected accountPage(title: string, current: string, opts: AccountFrameView, body: string): string {
    const link = (href: string, label: string) =>
      `<a href="${href}"${href === current ? ' aria-current="page"' : ''}>${escapeHtml(label)}</a>`;
    return this.document(
      title,
      `<nav class="account" aria-label="Your account"><p class="lead">Signed in as <strong>${escapeHtml(opts.signedInAs)}</strong></p>
<p class="lead">${link('/account/apps', 'Connected apps')} · ${link('/account/security', 'Sign-in security')}</p></nav>
${body}
<form method="post" action="/logout">${hidden('csrf', opts.csrf)}<button type="submit" class="secondary">Sign out</button></form>`,
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
