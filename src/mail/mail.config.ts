import { ConfigError, type Env } from '../config/env';

/**
 * Outgoing mail: `SMTP_URL` (`smtp://user:pass@host:587` with STARTTLS when the server offers it, or `smtps://` for
 * TLS from the start) and `MAIL_FROM`, the sender (default `no-reply@` the issuer's host). Without `SMTP_URL`,
 * messages are logged in development (the demo's reset links), and in production the features that send mail are
 * off and say so.
 */
export class MailConfig {
  static readonly variables = ['SMTP_URL', 'MAIL_FROM'] as const;
  readonly smtpUrl: string | undefined;
  readonly from: string;
  /** Without a server: log messages (development) rather than turning the features off (production). */
  readonly logInstead: boolean;

  constructor(env: Env) {
    const url = env.SMTP_URL?.trim() || undefined;
    if (url !== undefined) {
      let parsed: URL;
      try {
        parsed = new URL(url);
      } catch {
        throw new ConfigError('SMTP_URL must be a URL such as smtp://user:password@mail.example.com:587');
      }
      if (parsed.protocol !== 'smtp:' && parsed.protocol !== 'smtps:') {
        throw new ConfigError(`SMTP_URL must start with smtp:// or smtps://, got "${parsed.protocol}"`);
      }
    }
    this.smtpUrl = url;
    const issuerHost = issuerHostOf(env.ISSUER);
    const from = env.MAIL_FROM?.trim() || `no-reply@${issuerHost}`;
    if (/[\r\n]/.test(from) || !from.includes('@')) throw new ConfigError('MAIL_FROM must be one e-mail address');
    this.from = from;
    this.logInstead = (env.NODE_ENV || 'development') !== 'production';
  }

  /** Whether mail can go out (or, in development, be logged). */
  get available(): boolean {
    return this.smtpUrl !== undefined || this.logInstead;
  }
}

function issuerHostOf(issuer: string | undefined): string {
  try {
    return issuer ? new URL(issuer).hostname : 'localhost';
  } catch {
    return 'localhost';
  }
}
