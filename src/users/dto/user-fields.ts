import { applyDecorators } from '@nestjs/common';
import { ApiProperty } from '@nestjs/swagger';
import { IsEmail, IsInt, IsString, Length, Max, MaxLength, Min } from 'class-validator';
import { OneOf, SingleLine } from '../../common/validation';
import { GENDERS, ROLES } from '../user.entity';

/** The validation of each user field, shared by the create and update DTOs. */
export const UserFields = {
  email: (required = true) =>
    applyDecorators(
      ApiProperty({ required, maxLength: 254, format: 'email', description: 'unique, case-insensitive', example: 'ada@example.com' }),
      IsString({ message: 'email must be a string' }),
      MaxLength(254, { message: 'email must be at most 254 characters' }),
      IsEmail({}, { message: 'email must be an email address' }),
    ),
  password: (required = true) =>
    applyDecorators(
      ApiProperty({ required, minLength: 12, maxLength: 128, writeOnly: true, example: 'correct horse battery staple' }),
      IsString({ message: 'password must be a string' }),
      Length(12, 128, { message: 'password must be 12 to 128 characters' }),
    ),
  name: (required = true) =>
    applyDecorators(
      ApiProperty({ required, minLength: 1, maxLength: 100, example: 'Ada Lovelace' }),
      IsString({ message: 'name must be a string' }),
      Length(1, 100, { message: 'name must be 1 to 100 characters' }),
      SingleLine('name'),
    ),
  gender: (required = true) => applyDecorators(ApiProperty({ required, enum: GENDERS, example: 'female' }), OneOf('gender', GENDERS)),
  age: (required = true) =>
    applyDecorators(
      ApiProperty({ required, type: 'integer', minimum: 0, maximum: 150, example: 36 }),
      IsInt({ message: 'age must be an integer between 0 and 150' }),
      Min(0, { message: 'age must be an integer between 0 and 150' }),
      Max(150, { message: 'age must be an integer between 0 and 150' }),
    ),
  role: (required = true) =>
    applyDecorators(ApiProperty({ required, enum: ROLES, description: 'administrators only', example: 'user' }), OneOf('role', ROLES)),
};
