import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Controller, Get, Res } from '@nestjs/common';
import { ApiOkResponse, ApiProduces } from '@nestjs/swagger';
import type { Response } from 'express';
import { Public } from '../../auth/auth.decorators';
import { ApiProblems } from '../../common/openapi';
import { NoQueryParams } from '../../common/validation';

/**
 * The browser bundle of @simplewebauthn/browser, the file its package names for `<script>` use (`unpkg`): read
 * once, served from here so that no page loads code from another origin.
 */
function webauthnBrowserBundle(): string {
  const entry = require.resolve('@simplewebauthn/browser');
  const root = join(dirname(entry), '..');
  const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { unpkg: string };
  return readFileSync(join(root, manifest.unpkg), 'utf8');
}

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
export class AssetsController {
  /** Read at its first request (most instances' pages are served without it). */
  private webauthn: string | undefined;

  @Get('webauthn.js')
  @ApiProduces('text/javascript')
  @ApiProblems(400)
  @ApiOkResponse({ description: 'The browser part of SimpleWebAuthn (MIT), as published', content: { 'text/javascript': {} } })
  webauthnBundle(@Res() res: Response, @NoQueryParams() _query: unknown): void {
    sendScript(res, (this.webauthn ??= webauthnBrowserBundle()));
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
