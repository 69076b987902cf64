import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Controller, Get, type OnModuleInit, Res } from '@nestjs/common';
import { ApiOkResponse, ApiProduces } from '@nestjs/swagger';
import type { Response } from 'express';
import { Public } from '../../auth/auth.decorators';
import { ApiProblems } from '../../common/openapi';
import { StartupCheckError } from '../../common/startup-check.error';
import { NoQueryParams } from '../../common/validation';

/**
 * The browser bundle of @simplewebauthn/browser, served from here so that no page loads code from another origin.
 * scripts/build.mjs copies it at build time (the package exports no path to it) into the build's `assets/`:
 * `dist/assets/` for the built service, the repository's `assets/` for the sources as the tests run them.
 */
const WEBAUTHN_BUNDLE = join(__dirname, '..', '..', '..', 'assets', 'webauthn.js');

/**
 * Drives the pages' passkey forms (`form[data-passkey]`, see OAuthPages.passkeyForm): shows them where the browser
 * has WebAuthn; on submit, asks for a challenge, lets the browser use or create a passkey, and posts its answer.
 */
const PASSKEY_FORMS = `(() => {
  'use strict';
  const lib = window.SimpleWebAuthnBrowser;
  if (!lib || !lib.browserSupportsWebAuthn()) return;
  for (const form of document.querySelectorAll('form[data-passkey]')) {
    form.hidden = false;
    const status = form.querySelector('[data-passkey-status]');
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      status.textContent = '';
      try {
        const asked = await fetch(form.dataset.options, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
          body: JSON.stringify({ csrf: form.elements.csrf.value, step: form.dataset.passkey }),
          credentials: 'same-origin',
        });
        if (!asked.ok) throw new Error(asked.status === 401 ? 'This sign-in has expired: sign in again.' : 'The server refused (' + asked.status + ').');
        const optionsJSON = await asked.json();
        const answer = form.dataset.passkey === 'register'
          ? await lib.startRegistration({ optionsJSON })
          : await lib.startAuthentication({ optionsJSON });
        form.elements.response.value = JSON.stringify(answer);
        form.submit();
      } catch (error) {
        status.textContent = 'No passkey was used. ' + (error && error.message ? error.message : '');
      }
    });
  }
})();
`;

/** Scripts of the sign-in and account pages, the only ones their CSP allows (`script-src 'self'`). */
@Public()
@Controller('assets')
export class AssetsController implements OnModuleInit {
  /** Read at its first request (most instances' pages are served without it). */
  private webauthn: string | undefined;

  /** A build without the bundle stops the start, rather than failing the passkey pages later. */
  onModuleInit(): void {
    if (!existsSync(WEBAUTHN_BUNDLE)) {
      throw new StartupCheckError('the build has no assets/webauthn.js (the passkey pages load it): build with npm run build');
    }
  }

  @Get('webauthn.js')
  @ApiProduces('text/javascript')
  @ApiProblems(400)
  @ApiOkResponse({ description: 'The browser part of SimpleWebAuthn (MIT), as published', content: { 'text/javascript': {} } })
  webauthnBundle(@Res() res: Response, @NoQueryParams() _query: unknown): void {
    sendScript(res, (this.webauthn ??= readFileSync(WEBAUTHN_BUNDLE, 'utf8')));
  }

  @Get('passkeys.js')
  @ApiProduces('text/javascript')
  @ApiProblems(400)
  @ApiOkResponse({ description: "The script of the pages' passkey buttons", content: { 'text/javascript': {} } })
  passkeyForms(@Res() res: Response, @NoQueryParams() _query: unknown): void {
    sendScript(res, PASSKEY_FORMS);
  }
}

function sendScript(res: Response, body: string): void {
  res.status(200);
  res.setHeader('Content-Type', 'text/javascript; charset=utf-8');
  res.setHeader('Cache-Control', 'public, max-age=3600');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.send(body);
}
