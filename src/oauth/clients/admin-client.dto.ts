import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, IsArray, IsBoolean, IsIn, IsInt, IsObject, IsString, Length, Max, MaxLength, Min } from 'class-validator';
import { OneOf, OptionalField, SingleLine } from '../../common/validation';
import { ACR_VALUES, type Acr } from '../../auth/acr';
import { GRANT_TYPES, type GrantType } from '../entities/client.entity';
import { MAX_REFRESH_GRACE_SECONDS, TOKEN_ENDPOINT_AUTH_METHODS, type TokenEndpointAuthMethod } from './client-metadata';
import { ASSERTION_SIGNING_ALGS } from '../client-auth/client-jwks';

/** The `private_key_jwt` fields of a client (each checked further by the clients service). */
class ClientKeysDto {
  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    example: { keys: [{ kty: 'EC', crv: 'P-256', kid: 'k1', x: '...', y: '...' }] },
    description:
      'private_key_jwt: the public keys as a JWK Set (RSA 2048+, EC P-256, OKP Ed25519; no private members, at most 10); not with jwks_uri',
  })
  @OptionalField()
  @IsObject({ message: 'jwks must be a JWK Set (an object with keys)' })
  jwks?: object;

  @ApiPropertyOptional({
    example: 'https://reports.example.com/jwks.json',
    description: 'private_key_jwt: an https URL of the JWK Set; not with jwks',
  })
  @OptionalField()
  @IsString({ message: 'jwks_uri must be an https URL' })
  @MaxLength(2000, { message: 'jwks_uri must be an https URL' })
  jwks_uri?: string;

  @ApiPropertyOptional({
    enum: ASSERTION_SIGNING_ALGS,
    description: 'private_key_jwt: the one algorithm its assertions may use (any of these when omitted)',
  })
  @OptionalField()
  @OneOf('token_endpoint_auth_signing_alg', ASSERTION_SIGNING_ALGS)
  token_endpoint_auth_signing_alg?: string;
}

/** An optional list of at most 20 URIs (each checked further by the clients service). */
function OptionalUriList(field: string): PropertyDecorator {
  return applyDecorators(
    OptionalField(),
    IsArray({ message: `${field} must be an array of URIs` }),
    ArrayMaxSize(20, { message: `${field} holds at most 20 URIs` }),
    IsString({ each: true, message: `${field} must be an array of URIs` }),
  );
}

/** POST /admin/clients: what `client:create` takes, as JSON. */
export class CreateClientDto extends ClientKeysDto {
  @ApiProperty({ example: 'Reporting', minLength: 1, maxLength: 100 })
  @IsString({ message: 'name must be a string' })
  @Length(1, 100, { message: 'name must be 1 to 100 characters' })
  @SingleLine('name')
  name: string;

  @ApiPropertyOptional({ type: [String], example: ['https://reports.example.com/cb'], description: 'required for authorization_code' })
  @OptionalUriList('redirect_uris')
  redirect_uris?: string[];

  @ApiPropertyOptional({ example: false, default: false, description: 'a public client (PKCE, no secret)' })
  @OptionalField()
  @IsBoolean({ message: 'public must be true or false' })
  public?: boolean;

  @ApiPropertyOptional({ example: false, default: false, description: 'skips the consent page' })
  @OptionalField()
  @IsBoolean({ message: 'trusted must be true or false' })
  trusted?: boolean;

  @ApiPropertyOptional({ example: 'users:read orders:read', description: 'space-separated; every scope when omitted' })
  @OptionalField()
  @IsString({ message: 'scope must be a space-separated string' })
  scope?: string;

  @ApiPropertyOptional({ enum: GRANT_TYPES, isArray: true, example: ['authorization_code', 'refresh_token'] })
  @OptionalField()
  @IsArray({ message: `grant_types must be an array of: ${GRANT_TYPES.join(', ')}` })
  @IsIn(GRANT_TYPES as unknown as string[], { each: true, message: `grant_types must be an array of: ${GRANT_TYPES.join(', ')}` })
  grant_types?: GrantType[];

  @ApiPropertyOptional({ example: 0, minimum: 0, maximum: MAX_REFRESH_GRACE_SECONDS, default: 0 })
  @OptionalField()
  @IsInt({ message: `refresh_grace_seconds must be an integer from 0 to ${MAX_REFRESH_GRACE_SECONDS}` })
  @Min(0, { message: `refresh_grace_seconds must be an integer from 0 to ${MAX_REFRESH_GRACE_SECONDS}` })
  @Max(MAX_REFRESH_GRACE_SECONDS, { message: `refresh_grace_seconds must be an integer from 0 to ${MAX_REFRESH_GRACE_SECONDS}` })
  refresh_grace_seconds?: number;

  @ApiPropertyOptional({ type: [String], example: ['https://billing.example.com/api'], description: 'RFC 8707 resources besides this API' })
  @OptionalUriList('resources')
  resources?: string[];

  @ApiPropertyOptional({
    type: [String],
    example: ['https://reports.example.com/signed-out'],
    description: 'OpenID Connect RP-initiated logout: where the browser may be sent after signing out',
  })
  @OptionalUriList('post_logout_redirect_uris')
  post_logout_redirect_uris?: string[];

  @ApiPropertyOptional({
    enum: TOKEN_ENDPOINT_AUTH_METHODS,
    description:
      'a confidential client: its one authentication method (either secret method when omitted); private_key_jwt needs jwks or jwks_uri and gets no secret',
  })
  @OptionalField()
  @OneOf('token_endpoint_auth_method', TOKEN_ENDPOINT_AUTH_METHODS)
  token_endpoint_auth_method?: TokenEndpointAuthMethod;

  @ApiPropertyOptional({
    enum: ACR_VALUES,
    description: 'the sign-in level every person it signs in must reach (a stronger one than acr_values asks for wins); none when omitted',
  })
  @OptionalField()
  @OneOf('minimum_acr', ACR_VALUES)
  minimum_acr?: Acr;

  @ApiPropertyOptional({ example: false, default: false, description: 'RFC 9126: its authorization requests must be pushed to /par' })
  @OptionalField()
  @IsBoolean({ message: 'require_pushed_authorization_requests must be true or false' })
  require_pushed_authorization_requests?: boolean;

  @ApiPropertyOptional({
    example: false,
    default: false,
    description: 'RFC 9449: every token request carries a DPoP proof, so its access tokens are bound to a key',
  })
  @OptionalField()
  @IsBoolean({ message: 'dpop_bound_access_tokens must be true or false' })
  dpop_bound_access_tokens?: boolean;
}

/**
 * PUT /admin/clients/{clientId}: the allowed scopes (or scopes added and removed), the redirect URIs and/or the
 * post-logout redirect URIs, each replacing the old list; a private_key_jwt client's keys (jwks or jwks_uri), which replace the old ones.
 */
export class UpdateClientDto extends ClientKeysDto {
  @ApiPropertyOptional({
    enum: ['private_key_jwt'],
    description: 'makes a confidential client with a secret a private_key_jwt one (its secret stops working); needs jwks or jwks_uri',
  })
  @OptionalField()
  @OneOf('token_endpoint_auth_method', ['private_key_jwt'])
  token_endpoint_auth_method?: 'private_key_jwt';

  @ApiPropertyOptional({ example: 'users:read orders:read', description: 'space-separated' })
  @OptionalField()
  @IsString({ message: 'scope must be a space-separated string' })
  scope?: string;

  @ApiPropertyOptional({ example: 'products:read', description: 'space-separated scopes added to the allowed ones (not with scope)' })
  @OptionalField()
  @IsString({ message: 'add_scope must be a space-separated string' })
  add_scope?: string;

  @ApiPropertyOptional({ example: 'orders:write', description: 'space-separated scopes taken from the allowed ones (not with scope)' })
  @OptionalField()
  @IsString({ message: 'remove_scope must be a space-separated string' })
  remove_scope?: string;

  @ApiPropertyOptional({ type: [String], example: ['https://reports.example.com/cb'] })
  @OptionalUriList('redirect_uris')
  redirect_uris?: string[];

  @ApiPropertyOptional({ type: [String], example: ['https://reports.example.com/signed-out'], description: 'an empty list removes them' })
  @OptionalUriList('post_logout_redirect_uris')
  post_logout_redirect_uris?: string[];
}
