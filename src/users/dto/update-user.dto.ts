import { IsOptional } from 'class-validator';
import type { Gender, Role } from '../user.entity';
import { UserFields } from './user-fields';

/** PUT replaces the profile: every field but `password` and `role` is required. */
export class UpdateUserDto {
  @UserFields.email()
  email: string;

  @IsOptional()
  @UserFields.password()
  password?: string;

  @UserFields.name()
  name: string;

  @UserFields.gender()
  gender: Gender;

  @UserFields.age()
  age: number;

  @IsOptional()
  @UserFields.role()
  role?: Role;
}
