import type { NestExpressApplication } from '@nestjs/platform-express';
import { DocumentBuilder, type OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { allScopes, scopeDescription } from './auth/scopes';
import { AppConfig } from './config/app-config';

/** `GET /docs` (Swagger UI) and `GET /docs/openapi.json`, with the OAuth 2.0 code flow and its scopes. */
export function setupOpenApi(app: NestExpressApplication): void {
  const config = app.get(AppConfig);
  const document = () =>
    closedRequestBodies(
      SwaggerModule.createDocument(
        app,
        new DocumentBuilder()
          .setTitle('Resource API and OAuth 2.0 authorization server')
          .setDescription(
            'Users and their orders, protected by OAuth 2.0 bearer tokens (RFC 6750). Errors are application/problem+json (RFC 9457); the OAuth endpoints answer in the RFC 6749 format.',
          )
          .setVersion('1.0')
          .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' }, 'bearer')
          .addOAuth2(
            {
              type: 'oauth2',
              flows: {
                authorizationCode: {
                  authorizationUrl: `${config.issuer}/authorize`,
                  tokenUrl: `${config.issuer}/token`,
                  refreshUrl: `${config.issuer}/token`,
                  scopes: Object.fromEntries(allScopes().map((s) => [s, scopeDescription(s)])),
                },
              },
            },
            'oauth2',
          )
          .build(),
      ),
    );
  SwaggerModule.setup('docs', app, document, { jsonDocumentUrl: 'docs/openapi.json', raw: ['json'] });
}

/**
 * Marks the schema of every JSON request body `additionalProperties: false`: the validation pipe refuses a field a
 * DTO does not declare (400), so the document says so.
 */
function closedRequestBodies(document: OpenAPIObject): OpenAPIObject {
  const schemas = document.components?.schemas ?? {};
  for (const operations of Object.values(document.paths)) {
    for (const operation of Object.values(operations)) {
      const body = (operation as { requestBody?: { content?: Record<string, { schema?: { $ref?: string } }> } }).requestBody;
      const ref = body?.content?.['application/json']?.schema?.$ref;
      const schema = ref ? schemas[ref.slice(ref.lastIndexOf('/') + 1)] : undefined;
      if (schema && !('$ref' in schema)) schema.additionalProperties = false;
    }
  }
  return document;
}
