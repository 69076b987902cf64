import type { Response } from 'express';
import { leavingPage } from '../../interaction/leaving-page';
import { type OAuthPages, sendHtml, sendRedirect } from '../../interaction/pages';

export interface ClientErrorAnswer {
  /** The client's redirect URI with `error`, `error_description`, `state` and `iss`. */
  location: string;
  error: string;
  description: string;
  /**
   * The redirect URI is not one the server trusts (the client chose its own: RFC 7591 or a metadata document) and
   * the person has seen no page of this request yet.
   */
  untrusted: boolean;
  status: 302 | 303;
}

/**
 * Answers an error of /authorize: a redirect to the client, or for an untrusted redirect URI a 400 page with a link
 * there instead (RFC 9700 4.11.2: the server redirects on its own only to URIs it trusts), so that an attacker's
 * client cannot make this server an open redirector with an erroneous request.
 */
export function answerClientError(res: Response, pages: OAuthPages, answer: ClientErrorAnswer): void {
  if (!answer.untrusted) {
    sendRedirect(res, answer.status, answer.location);
    return;
  }
  const message = `${answer.error}: ${answer.description}`;
  sendHtml(res, 400, leavingPage(pages, { title: 'Invalid authorization request', message, error: true, href: answer.location }));
}
