import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { EventEmitter2 } from '@nestjs/event-emitter';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import type { AuthPrincipal } from '../auth/principal';
import type { RoleDirectory } from '../auth/role-directory';
import { isUniqueViolation } from '../common/database-errors';
import { CONTROL_CHARACTER } from '../common/text';
import { DomainError } from '../common/domain-error';
import { SqlRunner } from '../database/sql';
import type { Page } from '../common/pagination';
import type { CreateUserDto } from './dto/create-user.dto';
import type { ListUsersQueryDto } from './dto/list-users-query.dto';
import type { UpdateUserDto } from './dto/update-user.dto';
import { UserResponseDto } from './dto/user-response.dto';
import { UsersError } from './users.errors';
import { User, type Role } from './user.entity';
import { PasswordHasher } from './password-hasher';
import { USER_DELETING, UserDeletingEvent } from './user-events';
import { type ListedUserRow, ROLE_OF, TOTAL, TOTAL_OF_GENDER, listedUser, pageStatement } from './users.queries';

export interface Actor {
  id: string;
  role: Role;
}

export interface UserCredentials {
  id: string;
  passwordHash: string;
}

@Injectable()
export class UsersService implements RoleDirectory {
  constructor(
    @InjectRepository(User) private readonly users: Repository<User>,
    private readonly db: SqlRunner,
    private readonly hasher: PasswordHasher,
    private readonly events: EventEmitter2,
  ) {}

  /** The caller's id and role (read now); a token whose user is gone is no longer a valid caller. */
  async actor(principal: AuthPrincipal): Promise<Actor> {
    const role = await this.roleOf(principal.sub);
    if (!role) throw new DomainError(UsersError.UnknownPrincipal, 'The user of this access token no longer exists.');
    return { id: principal.sub, role };
  }

  /** Read on every `@Roles()` request (roles live with the users, so a demotion takes effect at once). */
  async roleOf(userId: string): Promise<Role | undefined> {
    if (typeof userId !== 'string') return undefined;
    return (await this.db.one<{ role: Role }>(ROLE_OF, { id: userId }))?.role;
  }

  /** Resolves the target user for a self-or-admin route; another user's id is "not found" for a non-admin. */
  async accessibleUserId(principal: AuthPrincipal, userId: string): Promise<Actor> {
    const actor = await this.actor(principal);
    if (actor.id !== userId && actor.role !== 'admin') throw userNotFound();
    return actor;
  }

  async list(query: ListUsersQueryDto): Promise<Page<UserResponseDto>> {
    const { gender, limit, offset } = query;
    const page = pageStatement(query.sort ?? 'createdAt', query.order === 'desc', gender !== undefined);
    const [rows, total] = await Promise.all([
      this.db.run<ListedUserRow>(page, gender === undefined ? { limit, offset } : { gender, limit, offset }),
      this.total(gender),
    ]);
    return { data: rows.rows.map((row) => UserResponseDto.from(listedUser(row))), page: { limit, offset, total } };
  }

  async get(principal: AuthPrincipal, userId: string): Promise<UserResponseDto> {
    if (principal.sub === userId) {
      // The caller's own record: one query serves both as the caller check and as the answer.
      const self = await this.users.findOne({ where: { id: userId } });
      if (!self) throw new DomainError(UsersError.UnknownPrincipal, 'The user of this access token no longer exists.');
      return UserResponseDto.from(self);
    }
    await this.accessibleUserId(principal, userId);
    return UserResponseDto.from(await this.mustFind(userId));
  }

  async create(dto: CreateUserDto): Promise<UserResponseDto> {
    const now = Date.now();
    const user = this.users.create({
      id: randomUUID(),
      email: dto.email,
      emailNormalized: dto.email.toLowerCase(),
      passwordHash: await this.hasher.hash(dto.password),
      name: dto.name,
      gender: dto.gender,
      age: dto.age,
      role: dto.role ?? 'user',
      createdAt: now,
      updatedAt: now,
    });
    try {
      await this.users.insert(user);
    } catch (error) {
      if (isUniqueViolation(error)) throw emailTaken();
      throw error;
    }
    return UserResponseDto.from(user);
  }

  async update(principal: AuthPrincipal, userId: string, dto: UpdateUserDto): Promise<UserResponseDto> {
    const actor = await this.accessibleUserId(principal, userId);
    if (dto.role !== undefined && actor.role !== 'admin') {
      throw new DomainError(UsersError.RoleChangeForbidden, 'Only an administrator may set a role.');
    }
    const changes: Partial<User> = {
      email: dto.email,
      emailNormalized: dto.email.toLowerCase(),
      name: dto.name,
      gender: dto.gender,
      age: dto.age,
      updatedAt: Date.now(),
    };
    if (dto.role !== undefined) changes.role = dto.role;
    if (dto.password !== undefined) changes.passwordHash = await this.hasher.hash(dto.password);
    try {
      const result = await this.users.update({ id: userId }, changes);
      if (!result.affected) throw userNotFound();
    } catch (error) {
      if (isUniqueViolation(error)) throw emailTaken();
      throw error;
    }
    return UserResponseDto.from(await this.mustFind(userId));
  }

  /** Deletes the user; orders, sessions, grants and refresh tokens go with it, and its access tokens stop working. */
  async delete(userId: string): Promise<void> {
    await this.events.emitAsync(USER_DELETING, new UserDeletingEvent(userId));
    const result = await this.users.delete({ id: userId });
    if (!result.affected) throw userNotFound();
  }

  /** For the login form: the password hash of an email, if such a user exists. */
  async credentials(email: string): Promise<UserCredentials | undefined> {
    // No stored address holds one (the DTO refuses them), and PostgreSQL rejects NUL in a query parameter.
    if (CONTROL_CHARACTER.test(email)) return undefined;
    const row = await this.users.findOne({
      where: { emailNormalized: email.toLowerCase() },
      select: { id: true, passwordHash: true },
    });
    return row ?? undefined;
  }

  async exists(userId: string): Promise<boolean> {
    return (await this.users.count({ where: { id: userId } })) > 0;
  }

  async isEmpty(): Promise<boolean> {
    return (await this.users.count()) === 0;
  }

  private async total(gender?: string): Promise<number> {
    const row = await this.db.one<{ total: number | string }>(
      gender === undefined ? TOTAL : TOTAL_OF_GENDER,
      gender === undefined ? {} : { gender },
    );
    return Number(row?.total ?? 0);
  }

  private async mustFind(userId: string): Promise<User> {
    const user = await this.users.findOne({ where: { id: userId } });
    if (!user) throw userNotFound();
    return user;
  }
}

function userNotFound(): DomainError {
  return new DomainError(UsersError.NotFound, 'No such user.');
}

function emailTaken(): DomainError {
  return new DomainError(UsersError.EmailTaken, 'A user with this email already exists.');
}
