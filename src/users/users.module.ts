import { Module } from '@nestjs/common';
import { AuditModule } from '../audit/audit.module';
import { RoleDirectory } from '../auth/role-directory';
import { TypeOrmModule } from '@nestjs/typeorm';
import { PasswordHasher } from './password-hasher';
import { ProfileUpdatesService } from './profile-updates.service';
import { UserCount } from './user-count.entity';
import { User } from './user.entity';
import { UsersController } from './users.controller';
import { UsersRepository } from './users.repository';
import { UsersService } from './users.service';

@Module({
  imports: [TypeOrmModule.forFeature([User, UserCount]), AuditModule],
  controllers: [UsersController],
  providers: [UsersService, ProfileUpdatesService, UsersRepository, PasswordHasher, { provide: RoleDirectory, useExisting: UsersService }],
  exports: [UsersService, UsersRepository, PasswordHasher],
})
export class UsersModule {}
