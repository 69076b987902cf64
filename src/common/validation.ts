import { type ArgumentMetadata, Injectable, type PipeTransform, Query, ValidationPipe, applyDecorators } from '@nestjs/common';
import { Transform } from 'class-transformer';
import { IsIn, IsInt, IsOptional, Max, Min, ValidateBy, ValidateIf, type ValidationError } from 'class-validator';
import { type FieldError, ValidationFailedError } from './domain-error';
import { CONTROL_CHARACTER, UNPAIRED_SURROGATE, UNPRINTABLE } from './text';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function flatten(errors: ValidationError[], prefix = ''): FieldError[] {
  const out: FieldError[] = [];
  for (const error of errors) {
    const field = prefix ? `${prefix}.${error.property}` : error.property;
    const messages = Object.entries(error.constraints ?? {}).map(([kind, message]) =>
      kind === 'whitelistValidation' ? `${field} is not an allowed field` : message,
    );
    if (messages.length) out.push({ field, message: messages.join('; ') });
    if (error.children?.length) out.push(...flatten(error.children, field));
  }
  return out;
}

/** Keys that class-transformer drops silently (prototype-pollution guard) instead of reporting as unknown. */
const PROTOTYPE_KEYS = ['__proto__', 'constructor', 'prototype'];

/** Fields of a body or query that the pipe rejects before the DTO's own rules, with the reason. */
function refusedFields(value: unknown, prefix = '', depth = 0, out: FieldError[] = []): FieldError[] {
  if (typeof value !== 'object' || value === null || depth > 32) return out;
  for (const key of Object.keys(value)) {
    const field = prefix ? `${prefix}.${key}` : key;
    const child = (value as Record<string, unknown>)[key];
    if (PROTOTYPE_KEYS.includes(key)) out.push({ field, message: `${field} is not an allowed field` });
    else if (typeof child === 'string' && UNPRINTABLE.test(child)) {
      out.push({ field, message: `${field} must not contain control characters` });
    } else if (typeof child === 'string' && UNPAIRED_SURROGATE.test(child)) {
      out.push({ field, message: `${field} must be valid Unicode text (it holds an unpaired surrogate)` });
    } else refusedFields(child, field, depth + 1, out);
  }
  return out;
}

/**
 * Query parameters given more than once (`?q=a&q=b`, which Express makes an array) where the route takes one
 * value: a DTO property not declared as an array (its `design:type`), or a single `@Query('q')` that is not one.
 * Reported here for every route, so that no DTO reaches a service with an array it did not ask for.
 */
function repeatedParameters(value: unknown, metadata: ArgumentMetadata): FieldError[] {
  if (metadata.type !== 'query' || value === null || typeof value !== 'object') return [];
  const once = (field: string) => ({ field, message: `${field} must be given once` });
  if (metadata.data) return Array.isArray(value) && metadata.metatype !== Array ? [once(metadata.data)] : [];
  const prototype: object = metadata.metatype?.prototype ?? Object.prototype;
  return Object.entries(value)
    .filter(([key, given]) => Array.isArray(given) && Reflect.getMetadata('design:type', prototype, key) !== Array)
    .map(([key]) => once(key));
}

/**
 * Reports `__proto__` / `constructor` / `prototype` keys as unknown fields (with every other bad field), where the
 * stock pipe would strip them silently and accept the request, and strings with control characters (see
 * {@link UNPRINTABLE}) or unpaired surrogates in any field, declared or not, and repeated query parameters, so that
 * no module's DTO has to remember them.
 */
class StrictValidationPipe extends ValidationPipe {
  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    // A custom parameter (the caller, the request) is not validated, as the stock pipe leaves it (validateCustomDecorators).
    if (metadata.type === 'custom') return value;
    const errors = [...repeatedParameters(value, metadata), ...(this.toValidate(metadata) ? refusedFields(value) : [])];
    if (errors.length === 0) return super.transform(value, metadata);
    try {
      await super.transform(value, metadata);
    } catch (error) {
      // The DTO's rules add what else is wrong; one that cannot even run on the refused value (validator's isEmail
      // throws on an unpaired surrogate) adds nothing: the request is refused for the fields named already.
      if (error instanceof ValidationFailedError) {
        const reported = new Set(errors.map((e) => e.field));
        errors.push(...error.errors.filter((e) => !reported.has(e.field)));
      }
    }
    throw new ValidationFailedError(errors);
  }
}

/** A one-line text field: no control characters at all, line breaks included. */
export function SingleLine(field: string) {
  return ValidateBy({
    name: 'singleLine',
    validator: {
      validate: (value: unknown) => typeof value !== 'string' || !CONTROL_CHARACTER.test(value),
      defaultMessage: () => `${field} must not contain control characters`,
    },
  });
}

/** The global pipe: strips nothing silently, rejects unknown fields, converts only where a DTO says so. */
export function createValidationPipe(): ValidationPipe {
  return new StrictValidationPipe({
    whitelist: true,
    forbidNonWhitelisted: true,
    forbidUnknownValues: true,
    transform: true,
    transformOptions: { enableImplicitConversion: false },
    validationError: { target: false, value: false },
    exceptionFactory: (errors) => new ValidationFailedError(flatten(errors)),
  });
}

/** Query strings arrive as strings: convert a plain decimal integer, leave anything else to fail `@IsInt`. */
function toInt({ value }: { value: unknown }): unknown {
  return typeof value === 'string' && /^-?\d{1,15}$/.test(value) ? Number(value) : value;
}

export function OptionalIntQuery(field: string, min: number, max: number) {
  return applyDecorators(
    IsOptional(),
    Transform(toInt),
    IsInt({ message: `${field} must be an integer between ${min} and ${max}` }),
    Min(min, { message: `${field} must be an integer between ${min} and ${max}` }),
    Max(max, { message: `${field} must be an integer between ${min} and ${max}` }),
  );
}

/**
 * An optional body field: it may be left out, but `null` is a wrong type like any other (IsOptional would let it
 * through, and the service would then write or hash null).
 */
export function OptionalField(): PropertyDecorator {
  return ValidateIf((_object, value) => value !== undefined);
}

/** An enumerated field whose error message lists every allowed value. */
export function OneOf(field: string, values: readonly string[]) {
  return IsIn(values as string[], { message: `${field} must be one of: ${values.join(', ')}` });
}

export const SORT_ORDERS = ['asc', 'desc'] as const;
export type SortOrder = (typeof SORT_ORDERS)[number];

/** Whether `value` is a UUID (any case), as path ids are. */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}

/** Path ids are UUIDs; anything else is a 400 naming the parameter, before any query runs. */
@Injectable()
export class UuidParamPipe implements PipeTransform<string, string> {
  transform(value: string, metadata: ArgumentMetadata): string {
    if (typeof value !== 'string' || !UUID.test(value)) {
      const field = metadata.data ?? 'id';
      throw new ValidationFailedError([{ field, message: `${field} must be a UUID` }]);
    }
    return value.toLowerCase();
  }
}

@Injectable()
export class NoQueryParamsPipe implements PipeTransform {
  transform(value: Record<string, unknown>): Record<string, unknown> {
    const keys = Object.keys(value ?? {});
    if (keys.length) {
      throw new ValidationFailedError(keys.map((field) => ({ field, message: `${field} is not an allowed query parameter` })));
    }
    return value;
  }
}

/** For routes that take no query parameters: any parameter is a 400. */
export function NoQueryParams(): ParameterDecorator {
  return Query(new NoQueryParamsPipe());
}
