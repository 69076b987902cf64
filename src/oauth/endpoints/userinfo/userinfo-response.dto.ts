import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { GENDERS, type Gender } from '../../../users/user.entity';

/** The UserInfo answer (OpenID Connect Core 5.3.2): `sub`, and the claims of the token's `profile` and `email` scopes. */
export class UserInfoResponseDto {
  @ApiProperty({ format: 'uuid', description: "The user id: the ID token's and the access token's `sub`" })
  sub: string;

  @ApiPropertyOptional({ description: 'scope profile' })
  name?: string;

  @ApiPropertyOptional({ enum: GENDERS, description: 'scope profile' })
  gender?: Gender;

  @ApiPropertyOptional({ type: 'integer', description: 'scope profile: when the profile last changed, seconds since the epoch' })
  updated_at?: number;

  @ApiPropertyOptional({ format: 'email', description: 'scope email' })
  email?: string;

  @ApiPropertyOptional({
    description: 'scope email: always false, as the service does not verify email addresses (anyone may type any)',
  })
  email_verified?: boolean;
}
