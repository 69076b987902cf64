import { Injectable } from '@nestjs/common';
import type { AuthPrincipal } from '../../../auth/principal';
import { UsersService } from '../../../users/users.service';
import type { UserInfoResponseDto } from './userinfo-response.dto';
import { SCOPE_CLAIMS } from '../../oidc/oidc.scopes';

/** The UserInfo endpoint's claims (OpenID Connect Core 5.3): the token's user, as much as its scopes release. */
@Injectable()
export class UserInfoService {
  constructor(private readonly users: UsersService) {}

  /** The claims of the caller's user; a token whose user is gone is an invalid token (401). */
  async claims(principal: AuthPrincipal): Promise<UserInfoResponseDto> {
    // The caller's own record (and the 401 when it no longer exists), in one query.
    const user = await this.users.get(principal, principal.sub);
    // Every claim of the DTO (the type makes sure none is forgotten).
    const values: Required<Omit<UserInfoResponseDto, 'sub'>> = {
      name: user.name,
      gender: user.gender,
      updated_at: Math.floor(Date.parse(user.updatedAt) / 1000),
      email: user.email,
      // Nobody proves to the service that they own the address they signed up with.
      email_verified: false,
    };
    const claims: UserInfoResponseDto = { sub: user.id };
    // The claims each scope releases are listed once, in SCOPE_CLAIMS (which discovery's claims_supported reads too).
    for (const [scope, names] of Object.entries(SCOPE_CLAIMS)) {
      if (principal.scopes.has(scope)) for (const name of names) Object.assign(claims, { [name]: values[name as keyof typeof values] });
    }
    return claims;
  }
}
