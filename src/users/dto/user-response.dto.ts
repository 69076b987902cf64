import type { Gender, Role, User } from '../user.entity';

export class UserResponseDto {
  id: string;
  email: string;
  name: string;
  gender: Gender;
  age: number;
  role: Role;
  createdAt: string;
  updatedAt: string;

  static from(user: User): UserResponseDto {
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
