import { OptionalField } from '../../common/validation';
import type { Gender, Role } from '../user.entity';
import { UserFields } from './user-fields';

/** PUT replaces the profile: every field but `password` and `role` is required. */
export class UpdateUserDto {
  @UserFields.email()
  email: string;

  @OptionalField()
  @UserFields.password(false)
  password?: string;

  @UserFields.name()
  name: string;

  @UserFields.gender()
  gender: Gender;

  @UserFields.age()
  age: number;

  @OptionalField()
  @UserFields.role(false)
  role?: Role;
}
