import { applyDecorators } from '@nestjs/common';
import { ApiQuery } from '@nestjs/swagger';
import { MAX_LOGIN_HINT_LENGTH } from '../../oidc/oidc.scopes';
import { MAX_NONCE_LENGTH } from './authorization-request';

/**
 * The query parameters of GET /authorize (RFC 6749 4.1.1, PKCE, OpenID Connect, RFC 8707), as OpenAPI describes them.
 * Listed last to first: applied in this order, they list the parameters as the same decorators stacked on a method do.
 */
export const ApiAuthorizeQuery = (): MethodDecorator =>
  applyDecorators(
    ApiQuery({
      name: 'resource',
      required: false,
      schema: { type: 'array', items: { type: 'string', format: 'uri' } },
      style: 'form',
      explode: true,
      description: 'RFC 8707 resource indicators (repeatable): the aud of the tokens; the API when omitted',
    }),
    ApiQuery({ name: 'ui_locales', required: false, schema: { type: 'string' }, description: 'OpenID Connect: accepted, not used' }),
    ApiQuery({
      name: 'id_token_hint',
      required: false,
      schema: { type: 'string' },
      description:
        "OpenID Connect: an ID token of this server for this client; the session must be its subject's, else a login (prompt=none: login_required); one signed by a key that has left is ignored",
    }),
    ApiQuery({
      name: 'login_hint',
      required: false,
      schema: { type: 'string', maxLength: MAX_LOGIN_HINT_LENGTH },
      description: "OpenID Connect: prefills the login form's email, nothing else",
    }),
    ApiQuery({
      name: 'max_age',
      required: false,
      schema: { type: 'integer', minimum: 0 },
      description: 'OpenID Connect: seconds since the login of the session beyond which the login page is shown again',
    }),
    ApiQuery({
      name: 'prompt',
      required: false,
      schema: { type: 'string' },
      description:
        'OpenID Connect, space-separated: none (no page: login_required or consent_required instead), login or select_account (the login page even with a session), consent (the consent page even after consent)',
    }),
    ApiQuery({
      name: 'nonce',
      required: false,
      schema: { type: 'string', maxLength: MAX_NONCE_LENGTH },
      description: 'OpenID Connect: repeated in the ID token of the code',
    }),
    ApiQuery({ name: 'code_challenge_method', required: false, schema: { type: 'string', enum: ['S256'] } }),
    ApiQuery({
      name: 'code_challenge',
      required: false,
      schema: { type: 'string' },
      description: 'PKCE (RFC 7636), required for public clients',
    }),
    ApiQuery({ name: 'state', required: false, schema: { type: 'string' } }),
    ApiQuery({
      name: 'scope',
      required: false,
      schema: { type: 'string' },
      description: "space-separated; the client's scopes when omitted",
    }),
    ApiQuery({
      name: 'redirect_uri',
      required: false,
      schema: { type: 'string', format: 'uri' },
      description: 'required when the client has several',
    }),
    ApiQuery({
      name: 'client_id',
      required: true,
      schema: { type: 'string', maxLength: 255 },
      description:
        "a registered client's id, or (client ID metadata documents) the https URL of the client's own metadata document, which is fetched and checked; the consent page then always shows",
    }),
    ApiQuery({ name: 'response_type', required: true, schema: { type: 'string', enum: ['code'] } }),
  );
