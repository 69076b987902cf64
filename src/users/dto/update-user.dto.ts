import { ApiProperty, OmitType } from '@nestjs/swagger';
import { IsString, Length } from 'class-validator';
import { OptionalField } from '../../common/validation';
import { CreateUserDto } from './create-user.dto';
import { UserFields } from './user-fields';

/** PUT replaces the profile: the fields of a new user, with `password` (and, as there, `role`) optional. */
export class UpdateUserDto extends OmitType(CreateUserDto, ['password'] as const) {
  @OptionalField()
  @UserFields.password(false)
  password?: string;

  /** The proof a person gives of their own record: without it a new password or email takes an aal2 token. */
  @OptionalField()
  @ApiProperty({
    required: false,
    minLength: 1,
    maxLength: 128,
    writeOnly: true,
    description:
      "The person's password as it is now: needed to change their own password or email unless the access token is of " +
      'an aal2 sign-in (an administrator changing another person always needs aal2). Ignored otherwise.',
    example: 'correct horse battery staple',
  })
  @IsString({ message: 'currentPassword must be a string' })
  @Length(1, 128, { message: 'currentPassword must be 1 to 128 characters' })
  currentPassword?: string;
}
