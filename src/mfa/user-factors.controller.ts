import { Controller, Delete, Get, Param } from '@nestjs/common';
import { ApiOkResponse, ApiTags } from '@nestjs/swagger';
import { type AuditBy, AuditedBy } from '../audit/audit-events';
import { Access, RequireAcr } from '../auth/auth.decorators';
import { ApiProblems, ApiUuidParams } from '../common/openapi';
import { NoQueryParams, UuidParamPipe } from '../common/validation';
import { DomainError } from '../common/domain-error';
import { UsersError } from '../users/users.errors';
import { UsersScope } from '../users/users.scopes';
import { UsersService } from '../users/users.service';
import { FactorsResetResponseDto, SignInFactorsResponseDto } from './dto/sign-in-factors.dto';
import { SignInFactorsService } from './sign-in-factors.service';

/** An administrator's view and reset of a person's sign-in factors (authenticator app, recovery codes, passkeys). */
@ApiTags('users')
@Controller('users/:userId/factors')
export class UserFactorsController {
  constructor(
    private readonly factors: SignInFactorsService,
    private readonly users: UsersService,
  ) {}

  @Get()
  @ApiUuidParams('userId')
  @Access({ scopes: [UsersScope.read], people: ['admin'] })
  @ApiOkResponse({ type: SignInFactorsResponseDto })
  @ApiProblems(404)
  async show(@Param('userId', UuidParamPipe) userId: string, @NoQueryParams() _query: unknown): Promise<SignInFactorsResponseDto> {
    await this.existing(userId);
    return this.factors.overview(userId);
  }

  @Delete()
  @ApiUuidParams('userId')
  @Access({ scopes: [UsersScope.write], people: ['admin'] })
  // Taking away someone's second factors takes two of the administrator's own (RFC 9470 step-up otherwise).
  @RequireAcr('aal2')
  @ApiOkResponse({
    type: FactorsResetResponseDto,
    description: 'Every factor removed (factor.removed audited, the administrator as actor)',
  })
  @ApiProblems(404)
  async reset(
    @Param('userId', UuidParamPipe) userId: string,
    @NoQueryParams() _query: unknown,
    @AuditedBy() by: AuditBy,
  ): Promise<FactorsResetResponseDto> {
    await this.existing(userId);
    return this.factors.resetAll(userId, by);
  }

  private async existing(userId: string): Promise<void> {
    if ((await this.users.roleOf(userId)) === undefined) throw new DomainError(UsersError.NotFound, 'No such user.');
  }
}
