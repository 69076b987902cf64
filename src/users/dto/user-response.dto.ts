import { ApiProperty } from '@nestjs/swagger';
import { PageInfoDto } from '../../common/pagination';
import { GENDERS, type Gender, ROLES, type Role } from '../user.entity';
import type { ListedUser } from '../users.repository';

export class UserResponseDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ format: 'email' }) email: string;
  @ApiProperty() name: string;
  @ApiProperty({ enum: GENDERS }) gender: Gender;
  @ApiProperty({ type: 'integer' }) age: number;
  @ApiProperty({ enum: ROLES }) role: Role;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ format: 'date-time' }) updatedAt: string;

  static from(user: ListedUser): UserResponseDto {
    const dto = new UserResponseDto();
    dto.id = user.id;
    dto.email = user.email;
    dto.name = user.name;
    dto.gender = user.gender;
    dto.age = user.age;
    dto.role = user.role;
    dto.createdAt = new Date(user.createdAt).toISOString();
    dto.updatedAt = new Date(user.updatedAt).toISOString();
    return dto;
  }
}

export class UserPageResponseDto {
  @ApiProperty({ type: [UserResponseDto] }) data: UserResponseDto[];
  @ApiProperty({ type: PageInfoDto }) page: PageInfoDto;
}
