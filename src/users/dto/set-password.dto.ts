import { PickType } from '@nestjs/swagger';
import { CreateUserDto } from './create-user.dto';

/** `user:set-password`: whose password, and the new one (the same rules as at creation). */
export class SetPasswordDto extends PickType(CreateUserDto, ['email', 'password'] as const) {}
