import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query, Res } from '@nestjs/common';
import { ApiCreatedResponse, ApiNoContentResponse, ApiOkResponse, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { type AuditBy, AuditedBy } from '../audit/audit-events';
import { ApiProblem, ApiProblems, ApiUuidParams } from '../common/openapi';
import { Access, Principal } from '../auth/auth.decorators';
import type { AuthPrincipal } from '../auth/principal';
import type { Page } from '../common/pagination';
import { NoQueryParams, UuidParamPipe } from '../common/validation';
import { CreateUserDto } from './dto/create-user.dto';
import { ListUsersQueryDto } from './dto/list-users-query.dto';
import { UpdateUserDto } from './dto/update-user.dto';
import { UserPageResponseDto, UserResponseDto } from './dto/user-response.dto';
import { ProfileUpdatesService } from './profile-updates.service';
import { UsersService } from './users.service';
import { UsersScope } from './users.scopes';

@ApiTags('users')
@ApiProblems(503)
@Controller('users')
export class UsersController {
  constructor(
    private readonly users: UsersService,
    private readonly profiles: ProfileUpdatesService,
  ) {}

  @Get()
  @Access({ scopes: [UsersScope.read], people: ['admin'], clientTokens: true })
  @ApiOkResponse({ type: UserPageResponseDto })
  list(@Query() query: ListUsersQueryDto): Promise<Page<UserResponseDto>> {
    return this.users.list(query);
  }

  @Get(':userId')
  @ApiUuidParams('userId')
  @Access({ scopes: [UsersScope.read], people: 'any', ownRecords: true })
  @ApiOkResponse({ type: UserResponseDto })
  @ApiProblems(404)
  get(
    @Principal() principal: AuthPrincipal,
    @Param('userId', UuidParamPipe) userId: string,
    @NoQueryParams() _query: unknown,
  ): Promise<UserResponseDto> {
    return this.users.get(principal, userId);
  }

  @Post()
  @Access({ scopes: [UsersScope.write], people: ['admin'] })
  @ApiCreatedResponse({ type: UserResponseDto, description: 'Location: /users/{id}' })
  @ApiProblems(409, 413, 415)
  async create(
    @Body() body: CreateUserDto,
    @NoQueryParams() _query: unknown,
    @Res({ passthrough: true }) res: Response,
  ): Promise<UserResponseDto> {
    const user = await this.users.create(body);
    res.location(`/users/${user.id}`);
    return user;
  }

  @Put(':userId')
  @ApiUuidParams('userId')
  // A person changes their own record; an administrator anyone's (ProfileUpdatesService decides).
  @Access({ scopes: [UsersScope.write], people: 'any', ownRecords: true })
  @ApiOkResponse({
    type: UserResponseDto,
    description: "A new password or email ends the person's sessions and grants, but the grant of the token that made it",
  })
  @ApiProblem(401, 'A new password or email without currentPassword or an aal2 token (WWW-Authenticate: insufficient_user_authentication)')
  @ApiProblem(403, 'A role set by a non-administrator, or a wrong currentPassword')
  @ApiProblems(404, 409, 413, 415)
  update(
    @Principal() principal: AuthPrincipal,
    @Param('userId', UuidParamPipe) userId: string,
    @Body() body: UpdateUserDto,
    @NoQueryParams() _query: unknown,
    @AuditedBy() by: AuditBy,
  ): Promise<UserResponseDto> {
    return this.profiles.update(principal, userId, body, by);
  }

  @Delete(':userId')
  @ApiUuidParams('userId')
  @Access({ scopes: [UsersScope.write], people: ['admin'] })
  @ApiNoContentResponse({ description: 'Deleted, with its orders, sessions, grants and refresh tokens' })
  @ApiProblems(404)
  @HttpCode(204)
  delete(@Param('userId', UuidParamPipe) userId: string, @NoQueryParams() _query: unknown): Promise<void> {
    return this.users.delete(userId);
  }
}
