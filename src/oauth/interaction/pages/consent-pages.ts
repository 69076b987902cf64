import { escapeHtml, hidden } from './page-html';
import type { ConsentPageView, DeviceCodePageView, DeviceConsentPageView } from './page-views';
import { SignInPages } from './sign-in-pages';

/** The pages where a person allows an application: the consent page, and the device flow's code and consent pages. */
export abstract class ConsentPages extends SignInPages {
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

  /**
   * What the consent page says of a client that is not registered here but named by the URL of its metadata
   * document: who publishes that name, where the person goes back to, and a warning for an application on their own
   * machine (anyone can publish a document that names localhost).
   */
  protected unregisteredClient(opts: ConsentPageView): string {
    if (opts.selfRegistered) {
      return `<p class="lead">This application registered itself: <strong>${escapeHtml(opts.clientName)}</strong> is the name it gave, which nobody here has checked. Allow it only if you know where you came from.</p>\n`;
    }
    const about = opts.metadataDocument;
    if (!about) return '';
    const local = about.loopbackOnly
      ? `<p class="error" role="alert">This application runs on your own computer (its address is on localhost), so nothing here vouches for its name. Allow it only if you started it yourself just now.</p>
`
      : '';
    return `<p class="lead">This application is not registered here. It describes itself in a document published by <strong>${escapeHtml(about.documentHost)}</strong>; after you decide, you go back to <strong>${escapeHtml(about.redirectHost)}</strong>.</p>
${local}`;
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
}
