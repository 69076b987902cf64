import { Controller, Get, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { Public } from '../auth/auth.decorators';
import { OAuthConfig, OAuthPages, escapeHtml, sendHtml } from '../oauth';
import { AppConfig } from '../config/app-config';

/** The demo client's redirect URI: shows the code it received and how to exchange it. */
@Public()
@Controller('demo')
export class DemoController {
  constructor(
    private readonly config: AppConfig,
    private readonly pages: OAuthPages,
    private readonly oauthConfig: OAuthConfig,
  ) {}

  @Get('callback')
  callback(@Req() req: Request, @Res() res: Response): void {
    const q = req.query as Record<string, unknown>;
    const text = (v: unknown) => (typeof v === 'string' ? v : '');
    if (q.error) {
      sendHtml(
        res,
        200,
        this.pages.document(
          'Authorization failed',
          `<div class="card"><h1>Authorization failed</h1>
<p class="error" role="alert">${escapeHtml(text(q.error))}: ${escapeHtml(text(q.error_description))}</p></div>`,
        ),
      );
      return;
    }
    const code = text(q.code);
    const curl = `curl -s -u "$CLIENT_ID:$CLIENT_SECRET" -d grant_type=authorization_code -d code=${code} -d redirect_uri=${this.config.issuer}/demo/callback ${this.config.issuer}/token`;
    sendHtml(
      res,
      200,
      this.pages.document(
        'Authorization code received',
        `<div class="card"><h1>Authorization code received</h1>
<p class="lead">Exchange it at the token endpoint within ${this.oauthConfig.authCodeTtl} seconds:</p>
<p><code id="code">${escapeHtml(code)}</code></p>
<p class="lead">state: <code>${escapeHtml(text(q.state))}</code> · iss: <code>${escapeHtml(text(q.iss))}</code></p>
<p><code>${escapeHtml(curl)}</code></p></div>`,
      ),
    );
  }
}
