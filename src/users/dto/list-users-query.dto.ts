import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional } from 'class-validator';
import { PageQueryDto } from '../../common/pagination';
import { OneOf } from '../../common/validation';
import { GENDERS, type Gender } from '../user.entity';

export const USER_SORT_KEYS = ['age', 'name', 'email', 'createdAt'] as const;
export type UserSortKey = (typeof USER_SORT_KEYS)[number];

export class ListUsersQueryDto extends PageQueryDto {
  @ApiPropertyOptional({ enum: GENDERS })
  @IsOptional()
  @OneOf('gender', GENDERS)
  gender?: Gender;

  @ApiPropertyOptional({ enum: USER_SORT_KEYS, default: 'createdAt', description: 'ties are broken by id' })
  @IsOptional()
  @OneOf('sort', USER_SORT_KEYS)
  sort?: UserSortKey;
}
