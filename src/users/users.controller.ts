import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query, Res } from '@nestjs/common';
import type { Response } from 'express';
import { Principal, Scopes } from '../auth/auth.decorators';
import type { AuthPrincipal } from '../auth/principal';
import type { Page } from '../common/pagination';
import { NoQueryParams, UuidParamPipe } from '../common/validation';
import { AdminOnly } from './admin.guard';
import { CreateUserDto } from './dto/create-user.dto';
import { ListUsersQueryDto } from './dto/list-users-query.dto';
import { UpdateUserDto } from './dto/update-user.dto';
import { UserResponseDto } from './dto/user-response.dto';
import { UsersService } from './users.service';

@Controller('users')
export class UsersController {
  constructor(private readonly users: UsersService) {}

  @Get()
  @Scopes('users:read')
  @AdminOnly()
  list(@Query() query: ListUsersQueryDto): Promise<Page<UserResponseDto>> {
    return this.users.list(query);
  }

  @Get(':userId')
  @Scopes('users:read')
  get(
    @Principal() principal: AuthPrincipal,
    @Param('userId', UuidParamPipe) userId: string,
    @NoQueryParams() _query: unknown,
  ): Promise<UserResponseDto> {
    return this.users.get(principal, userId);
  }

  @Post()
  @Scopes('users:write')
  @AdminOnly()
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
  @Scopes('users:write')
  update(
    @Principal() principal: AuthPrincipal,
    @Param('userId', UuidParamPipe) userId: string,
    @Body() body: UpdateUserDto,
    @NoQueryParams() _query: unknown,
  ): Promise<UserResponseDto> {
    return this.users.update(principal, userId, body);
  }

  @Delete(':userId')
  @Scopes('users:write')
  @AdminOnly()
  @HttpCode(204)
  delete(@Param('userId', UuidParamPipe) userId: string, @NoQueryParams() _query: unknown): Promise<void> {
    return this.users.delete(userId);
  }
}
