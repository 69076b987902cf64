import { applyDecorators } from '@nestjs/common';
import {
  ApiBody,
  ApiConsumes,
  ApiParam,
  ApiExtraModels,
  ApiProduces,
  ApiProperty,
  ApiPropertyOptional,
  ApiResponse,
  getSchemaPath,
} from '@nestjs/swagger';
import type { SchemaObject } from '@nestjs/swagger';

export class FieldErrorDto {
  @ApiProperty({ example: 'gender' })
  field: string;

  @ApiProperty({ example: 'gender must be one of: female, male, other' })
  message: string;
}

/** RFC 9457 problem details, the body of every error of the resource API. */
export class ProblemResponseDto {
  @ApiProperty({ example: 'urn:problem-type:validation-error' })
  type: string;

  @ApiProperty({ example: 'Bad Request' })
  title: string;

  @ApiProperty({ example: 400 })
  status: number;

  @ApiProperty({ example: 'The request has invalid fields' })
  detail: string;

  @ApiProperty({ example: '/users' })
  instance: string;

  @ApiPropertyOptional({ type: [FieldErrorDto], description: 'Every bad field (validation errors only)' })
  errors?: FieldErrorDto[];
}

const DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid input (unknown or malformed field, parameter or id), or a malformed bearer request',
  401: 'No, invalid, expired or revoked access token',
  403: 'Missing scope (WWW-Authenticate names every scope the route needs), a client-credentials token on a route for people, or a route for administrators only',
  404: 'No such resource, or one that belongs to another user',
  409: 'Conflict (e.g. the email is taken)',
  413: 'Body larger than 100 kB',
  415: 'A body that is not JSON, in an unsupported encoding or charset',
  429: 'Too many requests (Retry-After says when to try again)',
  503: 'The database is unreachable',
};

/** Documents error answers as application/problem+json. */
export function ApiProblems(...statuses: number[]) {
  return applyDecorators(...statuses.map((status) => ApiProblem(status, DESCRIPTIONS[status] ?? 'Error')));
}

/** Documents one application/problem+json answer whose meaning on this route is its own. */
export function ApiProblem(status: number, description: string) {
  return applyDecorators(
    ApiExtraModels(ProblemResponseDto),
    ApiResponse({ status, description, content: { 'application/problem+json': { schema: { $ref: getSchemaPath(ProblemResponseDto) } } } }),
  );
}

/** The body of an OAuth error answer (RFC 6749 5.2). */
const OAUTH_ERROR_SCHEMA: SchemaObject = {
  type: 'object',
  required: ['error', 'error_description'],
  additionalProperties: false,
  properties: {
    error: { type: 'string', example: 'invalid_grant' },
    error_description: { type: 'string', example: 'The authorization code is invalid.' },
  },
};

const FORM = 'application/x-www-form-urlencoded';

/**
 * An OAuth back-channel endpoint (token, revocation, introspection): a form body (`properties`, each a string;
 * `required` ones named), 200 with `ok`, the RFC 6749 error format for 400 and 401 (a client that fails to
 * authenticate), and problem+json for 429 and 503.
 */
export function ApiOAuthEndpoint(options: {
  properties: Record<string, SchemaObject>;
  required?: string[];
  ok: { description: string; schema?: SchemaObject; status?: number };
  /** The `error` codes its 400 answers may carry, when listed. */
  errorCodes?: string[];
  rateLimited?: boolean;
}) {
  const codes = options.errorCodes;
  const errors = (status: number, description: string) => {
    const schema: SchemaObject =
      status === 400 && codes
        ? { ...OAUTH_ERROR_SCHEMA, properties: { ...OAUTH_ERROR_SCHEMA.properties, error: { type: 'string', enum: codes } } }
        : OAUTH_ERROR_SCHEMA;
    return ApiResponse({ status, description, content: { 'application/json': { schema } } });
  };
  return applyDecorators(
    ApiConsumes(FORM),
    ApiBody({ required: true, schema: { type: 'object', required: options.required, properties: options.properties } }),
    ApiResponse({
      status: options.ok.status ?? 200,
      description: options.ok.description,
      content: options.ok.schema ? { 'application/json': { schema: options.ok.schema } } : undefined,
    }),
    errors(400, 'RFC 6749 error: a malformed request (not a form, a parameter missing or repeated), or a refused grant'),
    errors(401, 'RFC 6749 invalid_client: the client did not authenticate (WWW-Authenticate: Basic when it tried Basic)'),
    ApiProblems(...(options.rateLimited ? [429, 503] : [503])),
  );
}

/** An answer that is an HTML page. */
export function ApiHtml(status: number, description: string) {
  return applyDecorators(
    ApiProduces('text/html'),
    ApiResponse({ status, description, content: { 'text/html': { schema: { type: 'string' } } } }),
  );
}

/**
 * The 400 of a page that takes a form: its own HTML page, or problem+json when the body could not be read at
 * all (malformed, too deep); 413 and 415 as everywhere.
 */
export function ApiPageFormErrors(description: string) {
  return applyDecorators(
    ApiExtraModels(ProblemResponseDto),
    ApiResponse({
      status: 400,
      description: `${description}; problem+json when the body cannot be read`,
      content: {
        'text/html': { schema: { type: 'string' } },
        'application/problem+json': { schema: { $ref: getSchemaPath(ProblemResponseDto) } },
      },
    }),
    ApiProblems(413, 415),
  );
}

/** A redirect, with where it goes. */
export function ApiRedirect(status: 302 | 303, description: string) {
  return ApiResponse({ status, description, headers: { Location: { description: 'Where to go', schema: { type: 'string' } } } });
}

/** A form body of a browser page (login, consent). */
export function ApiPageForm(properties: Record<string, SchemaObject>, required: string[]) {
  return applyDecorators(ApiConsumes(FORM), ApiBody({ required: true, schema: { type: 'object', required, properties } }));
}

/** Path parameters that are UUIDs (checked by `UuidParamPipe`: anything else is 400). */
export function ApiUuidParams(...names: string[]) {
  return applyDecorators(...names.map((name) => ApiParam({ name, schema: { type: 'string', format: 'uuid' } })));
}
