import { Controller, Get, Header, HttpCode, Post } from '@nestjs/common';
import { ApiOkResponse, ApiTags } from '@nestjs/swagger';
import { Access, AtIssuer, Principal } from '../../../auth/auth.decorators';
import type { AuthPrincipal } from '../../../auth/principal';
import { ApiProblems } from '../../../common/openapi';
import { NoQueryParams } from '../../../common/validation';
import { UserInfoResponseDto } from './userinfo-response.dto';
import { OidcScope } from '../../oidc/oidc.scopes';
import { UserInfoService } from './userinfo.service';

/**
 * The OpenID Connect UserInfo endpoint (Core 5.3), GET or POST, with an access token that has `openid`: the bearer
 * guard answers RFC 6750 challenges (401 `invalid_token`, 403 `insufficient_scope`), as OpenID Connect asks.
 */
@ApiTags('openid-connect')
@ApiProblems(503)
@AtIssuer()
@Controller('userinfo')
export class UserInfoController {
  constructor(private readonly userInfo: UserInfoService) {}

  @Get()
  @Access({ scopes: [OidcScope.openid], people: 'any', ownRecords: true })
  @Header('Cache-Control', 'no-store')
  @ApiOkResponse({ type: UserInfoResponseDto })
  get(@Principal() principal: AuthPrincipal, @NoQueryParams() _query: unknown): Promise<UserInfoResponseDto> {
    return this.userInfo.claims(principal);
  }

  @Post()
  @HttpCode(200)
  // OpenID Connect's POST form of the read: the signed-in person's own claims.
  @Access({ scopes: [OidcScope.openid], people: 'any', ownRecords: true })
  @Header('Cache-Control', 'no-store')
  @ApiOkResponse({ type: UserInfoResponseDto })
  post(@Principal() principal: AuthPrincipal, @NoQueryParams() _query: unknown): Promise<UserInfoResponseDto> {
    return this.userInfo.claims(principal);
  }
}
