import { escapeHtml, hidden, PASSKEY_SCRIPTS } from './page-html';
import type {
  ForgotPasswordPageView,
  LoginPageView,
  LogoutPageView,
  ResetPasswordPageView,
  SecondFactorPageView,
  SignInEnrolmentPageView,
} from './page-views';
import { BasePages } from './base-pages';

/** The pages of a sign-in and a sign-out: the login form, the second step, setting up an authenticator at sign-in. */
export abstract class SignInPages extends BasePages {
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
${this.passkeyForm('sign-in', opts.csrf, 'Use a passkey', hidden('return_to', opts.returnTo))}
${(opts.connections ?? []).map((c) => `<p class="lead"><a class="button secondary" href="${escapeHtml(c.href)}">Sign in with ${escapeHtml(c.name)}</a></p>`).join('\n')}
<p class="lead"><a href="/forgot-password">Forgot your password?</a></p></div>${PASSKEY_SCRIPTS}`,
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

  /** "Forgot password": posts `email` and `csrf` to `/forgot-password`. */
  forgotPassword(opts: ForgotPasswordPageView): string {
    return this.document(
      'Reset your password',
      `<div class="card">
<h1>Reset your password</h1><p class="lead">Enter the e-mail address of your account, and we will send you a link to set a new password.</p>
${opts.error ? `<p class="error" role="alert">${escapeHtml(opts.error)}</p>` : ''}
<form method="post" action="/forgot-password">
${hidden('csrf', opts.csrf)}
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="username" required maxlength="254" autofocus>
<button type="submit">Send the link</button>
</form>
<p class="lead"><a href="/login">Back to sign-in</a></p></div>`,
    );
  }

  /** The form of a reset link: posts `token`, `password` and `csrf` to `/reset-password`. */
  resetPassword(opts: ResetPasswordPageView): string {
    return this.document(
      'Choose a new password',
      `<div class="card">
<h1>Choose a new password</h1><p class="lead">At least 12 characters. Setting it signs you out everywhere.</p>
${opts.error ? `<p class="error" role="alert">${escapeHtml(opts.error)}</p>` : ''}
<form method="post" action="/reset-password">
${hidden('token', opts.token)}${hidden('csrf', opts.csrf)}
<label for="password">New password</label>
<input id="password" name="password" type="password" autocomplete="new-password" required minlength="12" maxlength="128" autofocus>
<button type="submit">Set the password</button>
</form></div>`,
    );
  }
}
