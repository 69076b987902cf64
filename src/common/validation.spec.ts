import 'reflect-metadata';
import { IsOptional, IsString } from 'class-validator';
import { describe, expect, it } from 'vitest';
import { ValidationFailedError } from './domain-error';
import { createValidationPipe } from './validation';

/** A list query as a team might write it: `q` only optional (the mistake that let `?q=a&q=b` reach SQL), `tags` an array. */
class SearchQuery {
  @IsOptional()
  q?: string;

  @IsOptional()
  @IsString({ each: true })
  tags?: string[];
}

async function refusal(run: () => Promise<unknown>): Promise<ValidationFailedError> {
  const error = await run().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ValidationFailedError);
  return error as ValidationFailedError;
}

describe('the global validation pipe and repeated query parameters', () => {
  const pipe = createValidationPipe();

  it('refuses a parameter given twice that the DTO takes once, naming it, even when the DTO only marks it optional', async () => {
    const error = await refusal(() => pipe.transform({ q: ['a', 'b'] }, { type: 'query', metatype: SearchQuery }));
    expect(error.errors).toEqual([{ field: 'q', message: 'q must be given once' }]);
  });

  it('takes a repeated parameter the DTO declares as an array', async () => {
    const query = await pipe.transform({ q: 'a', tags: ['x', 'y'] }, { type: 'query', metatype: SearchQuery });
    expect(query).toEqual(Object.assign(new SearchQuery(), { q: 'a', tags: ['x', 'y'] }));
  });

  it("refuses a repeated single @Query('name') parameter, and leaves bodies' arrays to their DTO", async () => {
    const error = await refusal(() => pipe.transform(['a', 'b'], { type: 'query', metatype: String, data: 'state' }));
    expect(error.errors).toEqual([{ field: 'state', message: 'state must be given once' }]);
    expect(await pipe.transform('a', { type: 'query', metatype: String, data: 'state' })).toBe('a');
  });
});
