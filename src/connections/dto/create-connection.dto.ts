import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsBoolean, IsIn, IsOptional, IsString, IsUrl, Length, Matches } from 'class-validator';
import { SingleLine } from '../../common/validation';
import { CONNECTION_TYPES, type ConnectionType } from '../connection.entity';

const DOMAIN = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+$/;

/** `POST /admin/connections`: an upstream OpenID Connect provider and the e-mail domains it serves. */
export class CreateConnectionDto {
  @ApiProperty({ maxLength: 100, example: 'Example Corp' })
  @IsString()
  @Length(1, 100)
  @SingleLine('name')
  name: string;

  @ApiProperty({ enum: CONNECTION_TYPES, example: 'oidc' })
  @IsIn(CONNECTION_TYPES)
  type: ConnectionType;

  @ApiProperty({
    description: "the upstream's issuer identifier (https; http only outside production)",
    example: 'https://login.example.com',
  })
  @IsString()
  @Length(1, 2048)
  @IsUrl({ require_tld: false, require_protocol: true, protocols: ['https', 'http'] })
  issuer: string;

  @ApiProperty({ maxLength: 255 })
  @IsString()
  @Length(1, 255)
  @SingleLine('client_id')
  client_id: string;

  @ApiPropertyOptional({ maxLength: 512, writeOnly: true, description: 'sealed under KEY_ENCRYPTION_KEY; never shown again' })
  @IsOptional()
  @IsString()
  @Length(1, 512)
  client_secret?: string;

  @ApiProperty({ type: [String], example: ['example.com'], description: 'lower-case e-mail domains whose people it signs in' })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(50)
  @Matches(DOMAIN, { each: true, message: 'domains must be lower-case domain names such as example.com' })
  domains: string[];

  @ApiPropertyOptional({
    type: [String],
    example: ['sign-in-admins'],
    description: "the upstream groups (the ID token's groups claim) whose people are administrators here; with it, everyone else is a user",
  })
  @IsOptional()
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(50)
  @Matches(/^[^\s]{1,255}$/, { each: true, message: 'admin_groups must be group names without spaces (at most 255 characters)' })
  admin_groups?: string[];

  @ApiPropertyOptional({ default: false, description: "an upstream sign-in whose amr says mfa counts as this service's aal2" })
  @IsOptional()
  @IsBoolean()
  trust_upstream_mfa?: boolean;
}
