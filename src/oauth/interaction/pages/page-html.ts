/* The pieces every page is made of: escaping, the shared style, and the answers that carry a page or a redirect. */
import type { Response } from 'express';

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

export const STYLE = `
:root{color-scheme:light dark;--fg:#1b1f24;--muted:#57606a;--bg:#f6f8fa;--card:#fff;--line:#d0d7de;--accent:#0b5fff;--danger:#b42318}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--muted:#9da7b3;--bg:#0d1117;--card:#161b22;--line:#30363d;--accent:#4c8dff;--danger:#ff7b72}}
*{box-sizing:border-box}body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:var(--bg);color:var(--fg)}
main{max-width:26rem;margin:0 auto;padding:2rem 1rem}
.card{background:var(--card);border:1px solid var(--line);border-radius:12px;padding:1.5rem}
h1{font-size:1.35rem;margin:0 0 .25rem}p.lead{color:var(--muted);margin:0 0 1.25rem}
label{display:block;font-weight:600;margin:.75rem 0 .25rem}
input[type=email],input[type=password],input[type=text]{width:100%;padding:.65rem .75rem;font:inherit;border:1px solid var(--line);border-radius:8px;background:transparent;color:inherit}
input:focus,button:focus{outline:3px solid color-mix(in srgb,var(--accent) 40%,transparent);outline-offset:1px}
button{font:inherit;font-weight:600;padding:.7rem 1rem;border-radius:8px;border:1px solid var(--accent);background:var(--accent);color:#fff;cursor:pointer;width:100%;margin-top:1.25rem}
button.secondary{background:transparent;color:var(--fg);border-color:var(--line)}
.actions{display:flex;flex-wrap:wrap;gap:0 .75rem}.actions button{flex:1 1 0;min-width:max-content}
.error{color:var(--danger);border:1px solid var(--danger);border-radius:8px;padding:.6rem .75rem;margin:0 0 1rem}
ul.scopes{padding-left:1.1rem;margin:.5rem 0 0}ul.scopes li{margin:.35rem 0}p.granted{margin:1.25rem 0 0}ul.granted{color:var(--muted)}code{font-size:.9em;word-break:break-all}
footer{color:var(--muted);font-size:.85rem;text-align:center;margin-top:1rem}
.apps{list-style:none;padding:0;margin:0}.apps>li{margin:0 0 1rem}
h2{font-size:1.1rem;margin:0;overflow-wrap:anywhere}
dl.when{display:grid;grid-template-columns:auto 1fr;gap:.15rem .75rem;margin:1rem 0 0;color:var(--muted);font-size:.9rem}dl.when dd{margin:0}
button.danger{background:transparent;color:var(--danger);border-color:var(--danger)}
a{color:var(--accent)}p.lead:last-child{margin-bottom:0}
figure.qr{margin:0 auto 1rem;max-width:14rem;background:#fff;padding:.5rem;border-radius:8px}figure.qr svg{display:block;width:100%;height:auto}
main>.card+.card{margin-top:1rem}h3{font-size:1rem;margin:0;overflow-wrap:anywhere}
ul.passkeys{list-style:none;padding:0;margin:0 0 1rem}ul.passkeys>li{border-top:1px solid var(--line);padding:1rem 0}
ul.codes{display:grid;grid-template-columns:1fr 1fr;gap:.35rem 1rem;list-style:none;padding:0;margin:0 0 1.25rem;font-size:1.05rem}
`;

/**
 * A redirect to an absolute URL built with the URL API (so already percent-encoded), with an empty body. Express's
 * `res.redirect` also negotiates an HTML or text body from the Accept header on every call, which a client that
 * follows the Location header does not read.
 */
export function sendRedirect(res: Response, status: 302 | 303, location: string): void {
  res.statusCode = status;
  res.setHeader('Location', location);
  res.setHeader('Content-Length', '0');
  res.end();
}

/**
 * Sends a page of the authorization server with the headers every such page needs, whatever its content: not
 * frameable, no referrer, no external assets, never cached.
 */
export function sendHtml(res: Response, status: number, html: string): void {
  res.status(status);
  res.setHeader('Content-Type', 'text/html; charset=utf-8');
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Pragma', 'no-cache');
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.setHeader('X-Frame-Options', 'DENY');
  res.setHeader(
    'Content-Security-Policy',
    "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'unsafe-inline'; img-src 'self' data:; base-uri 'none'; frame-ancestors 'none'",
  );
  res.send(html);
}

export function hidden(name: string, value: string | undefined): string {
  return value === undefined ? '' : `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`;
}

/** The browser part of @simplewebauthn, then the script that drives the passkey forms (both served here). */
export const PASSKEY_SCRIPTS = '\n<script src="/assets/webauthn.js"></script><script src="/assets/passkeys.js"></script>';

/** A point in time for people, in UTC (the same for every reader: no script turns it into local time). */
export function timeElement(ms: number): string {
  const iso = new Date(ms).toISOString();
  return `<time datetime="${iso}">${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC</time>`;
}
