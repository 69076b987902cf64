import { OmitType } from '@nestjs/swagger';
import { OptionalField } from '../../common/validation';
import { CreateUserDto } from './create-user.dto';
import { UserFields } from './user-fields';

/** PUT replaces the profile: the fields of a new user, with `password` (and, as there, `role`) optional. */
export class UpdateUserDto extends OmitType(CreateUserDto, ['password'] as const) {
  @OptionalField()
  @UserFields.password(false)
  password?: string;
}
