import { type ArgumentsHost, Catch, type ExceptionFilter } from '@nestjs/common';
import type { Response } from 'express';
import { OAuthError, safeDescription } from './oauth-error';

/** Answers an {@link OAuthError} in the RFC 6749 5.2 format; bound to the token, revocation and introspection controllers. */
@Catch(OAuthError)
export class OAuthErrorFilter implements ExceptionFilter<OAuthError> {
  catch(exception: OAuthError, host: ArgumentsHost): void {
    const res = host.switchToHttp().getResponse<Response>();
    res.status(exception.status);
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('Pragma', 'no-cache');
    if (exception.error === 'invalid_client' && exception.basicChallenge) {
      res.setHeader('WWW-Authenticate', 'Basic realm="oauth", charset="UTF-8"');
    }
    res.json({ error: exception.error, error_description: safeDescription(exception.description) });
  }
}
