import { ApiProperty } from '@nestjs/swagger';
import { IsInt, IsString, Length, Matches, Max, Min } from 'class-validator';
import { SingleLine } from '../../common/validation';

export class CreateOrderDto {
  @ApiProperty({ minLength: 1, maxLength: 200, example: 'Analytical engine' })
  @IsString({ message: 'item must be a string' })
  @Length(1, 200, { message: 'item must be 1 to 200 characters' })
  @SingleLine('item')
  item: string;

  @ApiProperty({ type: 'integer', minimum: 1, maximum: 10_000, example: 2 })
  @IsInt({ message: 'quantity must be an integer between 1 and 10000' })
  @Min(1, { message: 'quantity must be an integer between 1 and 10000' })
  @Max(10_000, { message: 'quantity must be an integer between 1 and 10000' })
  quantity: number;

  @ApiProperty({ type: 'integer', minimum: 0, maximum: 1_000_000_000, example: 129_900 })
  @IsInt({ message: 'unitPriceCents must be an integer between 0 and 1000000000' })
  @Min(0, { message: 'unitPriceCents must be an integer between 0 and 1000000000' })
  @Max(1_000_000_000, { message: 'unitPriceCents must be an integer between 0 and 1000000000' })
  unitPriceCents: number;

  @ApiProperty({ pattern: '^[A-Z]{3}$', example: 'EUR' })
  @IsString({ message: 'currency must be three upper-case letters' })
  @Matches(/^[A-Z]{3}$/, { message: 'currency must be three upper-case letters' })
  currency: string;
}
