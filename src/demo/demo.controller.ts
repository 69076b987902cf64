import { Controller, Get, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { Public } from '../auth/auth.decorators';
import { OAuthConfig, OAuthPages, escapeHtml, sendHtml } from '../oauth';
import { AppConfig } from '../config/app-config';
import { ApiHtml } from '../common/openapi';
import { apiCommand, tokenCommand } from './demo-commands';

/** The demo client's redirect URI: shows the code it received and the shell line that trades it for tokens. */
@Public()
@Controller('demo')
export class DemoController {
  constructor(
    private readonly config: AppConfig,
    private readonly pages: OAuthPages,
    private readonly oauthConfig: OAuthConfig,
  ) {}

  @Get('callback')
  @ApiHtml(200, 'The code (or the error) the demo client received, and the curl line that trades the code for tokens')
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
    const command = tokenCommand(this.config.issuer, code);
    // The line a person pastes into a shell: shown only for a value shaped like this server's codes.
    const run = command
      ? `<p class="lead">Trade it for tokens within ${this.oauthConfig.authCodeTtl} seconds (it works once): run this in the shell where you set
CLIENT_ID, CLIENT_SECRET and CODE_VERIFIER from the start's output.</p>
<p><code id="token-command">${escapeHtml(command)}</code></p>
<p class="lead">Then call the API: <code>${escapeHtml(apiCommand(this.config.issuer))}</code></p>`
      : '<p class="lead">No code of this server in this request: nothing to trade for tokens.</p>';
    sendHtml(
      res,
      200,
      this.pages.document(
        'Authorization code received',
        `<div class="card"><h1>Authorization code received</h1>
<p><code id="code">${escapeHtml(code)}</code></p>
<p class="lead">state: <code>${escapeHtml(text(q.state))}</code> · iss: <code>${escapeHtml(text(q.iss))}</code></p>
${run}</div>`,
      ),
    );
  }
}
