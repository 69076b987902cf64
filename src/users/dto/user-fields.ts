import { applyDecorators } from '@nestjs/common';
import { IsEmail, IsInt, IsString, Length, Max, MaxLength, Min } from 'class-validator';
import { OneOf } from '../../common/validation';
import { GENDERS, ROLES } from '../user.entity';

/** The validation of each user field, shared by the create and update DTOs. */
export const UserFields = {
  email: () =>
    applyDecorators(
      IsString({ message: 'email must be a string' }),
      MaxLength(254, { message: 'email must be at most 254 characters' }),
      IsEmail({}, { message: 'email must be an email address' }),
    ),
  password: () =>
    applyDecorators(
      IsString({ message: 'password must be a string' }),
      Length(12, 128, { message: 'password must be 12 to 128 characters' }),
    ),
  name: () =>
    applyDecorators(IsString({ message: 'name must be a string' }), Length(1, 100, { message: 'name must be 1 to 100 characters' })),
  gender: () => OneOf('gender', GENDERS),
  age: () =>
    applyDecorators(
      IsInt({ message: 'age must be an integer between 0 and 150' }),
      Min(0, { message: 'age must be an integer between 0 and 150' }),
      Max(150, { message: 'age must be an integer between 0 and 150' }),
    ),
  role: () => OneOf('role', ROLES),
};
