import { type OAuthPages, escapeHtml } from './pages';

export interface LeavingPageView {
  title: string;
  /** What happened: an error (shown as one) or a notice such as "You are signed out". */
  message: string;
  error: boolean;
  /** Where the client asked the browser to go: an absolute http(s) URI with the response's parameters. */
  href: string;
}

/**
 * A page with a link to a URI this server does not vouch for (a client that chose its own redirect URIs, or a
 * logout no ID token of the client asked for), shown instead of redirecting there on its own (RFC 9700 4.11.2):
 * the person decides. Drawn inside the pages' document, so a rebranded `OAuthPages` styles it too.
 */
export function leavingPage(pages: OAuthPages, view: LeavingPageView): string {
  const url = new URL(view.href);
  // Only a web URI becomes a link (registration allows no other; a javascript: URI never would run here anyway).
  const link =
    url.protocol === 'https:' || url.protocol === 'http:'
      ? `<p class="lead"><a href="${escapeHtml(url.href)}" rel="noreferrer">Continue to ${escapeHtml(url.host)}</a></p>`
      : '';
  const message = view.error
    ? `<p class="error" role="alert">${escapeHtml(view.message)}</p>`
    : `<p class="lead">${escapeHtml(view.message)}</p>`;
  return pages.document(
    view.title,
    `<div class="card"><h1>${escapeHtml(view.title)}</h1>${message}
<p class="lead">The application asks to send you on to <strong>${escapeHtml(url.host)}</strong>, a site this server does not vouch for. Continue only if you trust it.</p>
${link}</div>`,
  );
}
