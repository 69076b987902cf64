/**
 * What the authorization server offers other modules (the demo's seed data, pages and the sign-in forms' CSRF token): everything else under
 * `src/oauth` is its own (`npm run lint` refuses an import into its folders from outside).
 */
export { ClientsService } from './clients/clients.service';
export { OAuthPages, escapeHtml, sendHtml } from './interaction/pages';
export { SignInSteps } from './interaction/sign-in-steps';
export { clearCookie, readCookie, setCookie } from './interaction/cookies';
export { safeReturnTo } from './interaction/return-to';
export { SIGN_IN_CONNECTIONS, type SignInConnections, type SignInLink } from './interaction/sign-in-connections';
export { OAuthConfig } from './oauth.config';
export { OAuthModule } from './oauth.module';
