import { Injectable } from '@nestjs/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CustomPagesModule } from '../../src/oauth/interaction/custom-pages.module';
import { OAuthPages, escapeHtml } from '../../src/oauth/interaction/pages';
import { type TestApp, createTestApp } from '../support/test-app';

@Injectable()
class AcmePages extends OAuthPages {
  override document(title: string, body: string): string {
    return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Acme · ${escapeHtml(title)}</title></head><body class="acme">${body}</body></html>`;
  }
}

describe('rebranded pages (CustomPagesModule.use)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({}, undefined, { imports: [CustomPagesModule.use(AcmePages)] });
  });
  afterAll(() => t.close());

  it('serves the login page through the registered subclass, with the same form and security headers', async () => {
    const res = await t.http().get('/login?return_to=%2Fauthorize');
    expect(res.status).toBe(200);
    expect(res.text).toContain('<title>Acme · Sign in</title>');
    expect(res.text).toContain('<body class="acme">');
    expect(res.text).toMatch(/<form method="post" action="\/login">/);
    expect(res.text).toContain('name="csrf"');
    expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    expect(res.headers['cache-control']).toBe('no-store');
  });

  it('serves the error page of a bad authorization request through the subclass', async () => {
    const res = await t.http().get('/authorize?client_id=no-such-client&response_type=code');
    expect(res.status).toBe(400);
    expect(res.text).toContain('<title>Acme · Invalid authorization request</title>');
  });
});
