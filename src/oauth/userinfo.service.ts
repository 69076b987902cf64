import { Injectable } from '@nestjs/common';
import type { AuthPrincipal } from '../auth/principal';
import { UsersService } from '../users/users.service';
import type { UserInfoResponseDto } from './dto/userinfo-response.dto';
import { OidcScope } from './oidc.scopes';

/** The UserInfo endpoint's claims (OpenID Connect Core 5.3): the token's user, as much as its scopes release. */
@Injectable()
export class UserInfoService {
  constructor(private readonly users: UsersService) {}

  /** The claims of the caller's user; a token whose user is gone is an invalid token (401). */
  async claims(principal: AuthPrincipal): Promise<UserInfoResponseDto> {
    // The caller's own record (and the 401 when it no longer exists), in one query.
    const user = await this.users.get(principal, principal.sub);
    const claims: UserInfoResponseDto = { sub: user.id };
    if (principal.scopes.has(OidcScope.profile)) {
      claims.name = user.name;
      claims.gender = user.gender;
      claims.updated_at = Math.floor(Date.parse(user.updatedAt) / 1000);
    }
    if (principal.scopes.has(OidcScope.email)) {
      claims.email = user.email;
      // Nobody proves to the service that they own the address they signed up with.
      claims.email_verified = false;
    }
    return claims;
  }
}
