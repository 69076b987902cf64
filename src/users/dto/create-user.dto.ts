import { OptionalField } from '../../common/validation';
import type { Gender, Role } from '../user.entity';
import { UserFields } from './user-fields';

export class CreateUserDto {
  @UserFields.email()
  email: string;

  @UserFields.password()
  password: string;

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
