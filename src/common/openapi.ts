import { applyDecorators } from '@nestjs/common';
import { ApiExtraModels, ApiProperty, ApiPropertyOptional, ApiResponse, getSchemaPath } from '@nestjs/swagger';

export class FieldErrorDto {
  @ApiProperty({ example: 'gender' })
  field: string;

  @ApiProperty({ example: 'gender must be one of: female, male, other' })
  message: string;
}

/** RFC 9457 problem details, the body of every error of the resource API. */
export class ProblemResponseDto {
  @ApiProperty({ example: 'urn:problem-type:validation-error' })
  type: string;

  @ApiProperty({ example: 'Bad Request' })
  title: string;

  @ApiProperty({ example: 400 })
  status: number;

  @ApiProperty({ example: 'The request has invalid fields' })
  detail: string;

  @ApiProperty({ example: '/users' })
  instance: string;

  @ApiPropertyOptional({ type: [FieldErrorDto], description: 'Every bad field (validation errors only)' })
  errors?: FieldErrorDto[];
}

const DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid input (unknown or malformed field, parameter or id), or a malformed bearer request',
  401: 'No, invalid, expired or revoked access token',
  403: 'Missing scope (WWW-Authenticate names it), or a route for administrators only',
  404: 'No such resource, or one that belongs to another user',
  409: 'Conflict (e.g. the email is taken)',
  413: 'Body larger than 100 kB',
  503: 'The database is unreachable',
};

/** Documents error answers as application/problem+json. */
export function ApiProblems(...statuses: number[]) {
  return applyDecorators(
    ApiExtraModels(ProblemResponseDto),
    ...statuses.map((status) =>
      ApiResponse({
        status,
        description: DESCRIPTIONS[status] ?? 'Error',
        content: { 'application/problem+json': { schema: { $ref: getSchemaPath(ProblemResponseDto) } } },
      }),
    ),
  );
}
