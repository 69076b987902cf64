import { Module } from '@nestjs/common';
import { RoleDirectory } from '../auth/role-directory';
import { TypeOrmModule } from '@nestjs/typeorm';
import { SqlRunner } from '../database/sql';
import { PasswordHasher } from './password-hasher';
import { UserCount } from './user-count.entity';
import { User } from './user.entity';
import { UsersController } from './users.controller';
import { UsersRepository } from './users.repository';
import { UsersService } from './users.service';

@Module({
  imports: [TypeOrmModule.forFeature([User, UserCount])],
  controllers: [UsersController],
  providers: [UsersService, UsersRepository, PasswordHasher, SqlRunner, { provide: RoleDirectory, useExisting: UsersService }],
  exports: [UsersService, UsersRepository, PasswordHasher],
})
export class UsersModule {}
