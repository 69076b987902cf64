import { describe, expect, it } from 'vitest';
import { ConfigError } from '../config/env';
import { MailConfig } from './mail.config';

describe('MailConfig', () => {
  it('sends over SMTP_URL, from MAIL_FROM or no-reply@ the issuer host', () => {
    const config = new MailConfig({ SMTP_URL: 'smtps://u:p@mail.example.com', ISSUER: 'https://login.example.com' });
    expect([config.smtpUrl, config.from, config.available]).toEqual(['smtps://u:p@mail.example.com', 'no-reply@login.example.com', true]);
    expect(new MailConfig({ MAIL_FROM: 'accounts@example.com' }).from).toBe('accounts@example.com');
  });

  it('without SMTP_URL: logs in development, is off in production', () => {
    expect(new MailConfig({ NODE_ENV: 'development' }).available).toBe(true);
    expect(new MailConfig({ NODE_ENV: 'production' }).available).toBe(false);
  });

  it('refuses a URL of another scheme, and a sender with a line break', () => {
    expect(() => new MailConfig({ SMTP_URL: 'http://mail.example.com' })).toThrow(ConfigError);
    expect(() => new MailConfig({ SMTP_URL: 'not a url' })).toThrow(ConfigError);
    expect(() => new MailConfig({ MAIL_FROM: 'a@example.com\r\nBcc: x@example.com' })).toThrow(ConfigError);
  });
});
