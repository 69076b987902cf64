import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { EventEmitter2 } from '@nestjs/event-emitter';
import type { AuthPrincipal } from '../auth/principal';
import type { RoleDirectory } from '../auth/role-directory';
import { isUniqueViolation } from '../database/database-errors';
import { CONTROL_CHARACTER } from '../common/text';
import { DomainError } from '../common/domain-error';
import type { Page } from '../common/pagination';
import type { CreateUserDto } from './dto/create-user.dto';
import type { ListUsersQueryDto } from './dto/list-users-query.dto';
import type { SetPasswordDto } from './dto/set-password.dto';
import { UserResponseDto } from './dto/user-response.dto';
import { MANAGED_BY_CONNECTION, UsersError } from './users.errors';
import { type Gender, User, type Role } from './user.entity';
import { PasswordHasher } from './password-hasher';
import { USER_DELETING, USER_PASSWORD_RESET, UserDeletingEvent, UserPasswordResetEvent } from './user-events';
import { UsersRepository } from './users.repository';

export interface Actor {
  id: string;
  role: Role;
}

/** The stored password of a person who has none here (a connection's): not an argon2id hash, so nothing matches it. */
const NO_PASSWORD = '!federated';

export interface UserCredentials {
  id: string;
  passwordHash: string;
  /** Read with the password: whether the person must sign in with a second factor depends on it. */
  role: Role;
}

@Injectable()
export class UsersService implements RoleDirectory {
  constructor(
    private readonly users: UsersRepository,
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
    return this.users.roleOf(userId);
  }

  /** Resolves the target user for a self-or-admin route; another user's id is "not found" for a non-admin. */
  async accessibleUserId(principal: AuthPrincipal, userId: string): Promise<Actor> {
    const actor = await this.actor(principal);
    if (actor.id !== userId && actor.role !== 'admin') throw userNotFound();
    return actor;
  }

  async list(query: ListUsersQueryDto): Promise<Page<UserResponseDto>> {
    const { gender, limit, offset } = query;
    const [rows, total] = await Promise.all([
      this.users.page({ sort: query.sort ?? 'createdAt', descending: query.order === 'desc', gender, limit, offset }),
      this.users.total(gender),
    ]);
    return { data: rows.map((row) => UserResponseDto.from(row)), page: { limit, offset, total } };
  }

  async get(principal: AuthPrincipal, userId: string): Promise<UserResponseDto> {
    if (principal.sub === userId) {
      // The caller's own record: one query serves both as the caller check and as the answer.
      const self = await this.users.findById(userId);
      if (!self) throw new DomainError(UsersError.UnknownPrincipal, 'The user of this access token no longer exists.');
      return UserResponseDto.from(self);
    }
    await this.accessibleUserId(principal, userId);
    return UserResponseDto.from(await this.mustFind(userId));
  }

  async create(dto: CreateUserDto): Promise<UserResponseDto> {
    const now = Date.now();
    const user = this.users.build({
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

  /** Deletes the user; orders, sessions, grants and refresh tokens go with it, and its access tokens stop working. */
  async delete(userId: string): Promise<void> {
    await this.events.emitAsync(USER_DELETING, new UserDeletingEvent(userId));
    if (!(await this.users.delete(userId))) throw userNotFound();
  }

  /**
   * Replaces a person's password (an operator's reset from the command line), then ends their sessions and grants
   * (the `user.password-reset` event): whoever knew the old password is signed out. Not found when no user has the email.
   */
  async setPassword(dto: SetPasswordDto): Promise<UserResponseDto> {
    const found = await this.credentials(dto.email);
    if (found && !UsersService.hasOwnPassword(found)) throw new DomainError(UsersError.ManagedByConnection, MANAGED_BY_CONNECTION);
    if (!found || !(await this.users.update(found.id, { passwordHash: await this.hasher.hash(dto.password), updatedAt: Date.now() }))) {
      throw userNotFound();
    }
    await this.events.emitAsync(USER_PASSWORD_RESET, new UserPasswordResetEvent(found.id));
    return UserResponseDto.from(await this.mustFind(found.id));
  }

  /**
   * A person a company identity provider vouches for, created at their first sign-in through it: no password of
   * this service (the stored value is no argon2id hash, so no password ever matches it). In the caller's unit.
   */
  async provision(person: { email: string; name: string; gender: Gender; age: number; role: Role }): Promise<string> {
    const now = Date.now();
    const id = randomUUID();
    const user = this.users.build({
      id,
      email: person.email,
      emailNormalized: person.email.toLowerCase(),
      passwordHash: NO_PASSWORD,
      name: person.name,
      gender: person.gender,
      age: person.age,
      role: person.role,
      createdAt: now,
      updatedAt: now,
    });
    await this.users.insert(user);
    return id;
  }

  /** What a connection says of a person at each sign-in: their name, and their role when it maps groups. In the caller's unit. */
  async updateFromConnection(userId: string, changes: { name?: string; role?: Role }): Promise<void> {
    await this.users.update(userId, { ...changes, updatedAt: Date.now() });
  }

  /** Whether the person of this id has a password of this service (false too when there is no such person). */
  async hasOwnPasswordById(userId: string): Promise<boolean> {
    const stored = await this.users.credentialsById(userId);
    return stored !== null && UsersService.hasOwnPassword(stored);
  }

  /** Whether the person has a password of this service (not someone a connection signs in). */
  static hasOwnPassword(credentials: Pick<UserCredentials, 'passwordHash'>): boolean {
    return credentials.passwordHash !== NO_PASSWORD;
  }

  /** Stores a person's new password hash (argon2id, hashed by the caller), in the caller's unit; false when gone. */
  replacePasswordHash(userId: string, passwordHash: string): Promise<boolean> {
    return this.users.update(userId, { passwordHash, updatedAt: Date.now() });
  }

  /** For the login form: the password hash of an email, if such a user exists. */
  async credentials(email: string): Promise<UserCredentials | undefined> {
    // No stored address holds one (the DTO refuses them), and PostgreSQL rejects NUL in a query parameter.
    if (CONTROL_CHARACTER.test(email)) return undefined;
    return (await this.users.credentialsOf(email.toLowerCase())) ?? undefined;
  }

  /**
   * After a password has matched `found`'s hash: stores a new hash of it when the stored one was made with other
   * parameters than the hasher's (an earlier release's), so each person moves to today's at their next sign-in.
   */
  async upgradePasswordHash(found: UserCredentials, password: string): Promise<void> {
    if (!this.hasher.needsRehash(found.passwordHash)) return;
    await this.users.replacePasswordHash(found.id, found.passwordHash, await this.hasher.hash(password));
  }

  exists(userId: string): Promise<boolean> {
    return this.users.exists(userId);
  }

  /** A person's email (what an authenticator app shows an account as); undefined when there is no such person. */
  async emailOf(userId: string): Promise<string | undefined> {
    return (await this.users.findById(userId))?.email;
  }

  isEmpty(): Promise<boolean> {
    return this.users.isEmpty();
  }

  private async mustFind(userId: string): Promise<User> {
    const user = await this.users.findById(userId);
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
