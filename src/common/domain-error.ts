export interface DomainErrorDefinition {
  /** The problem type is `urn:problem-type:<code>`. */
  code: string;
  status: number;
  /** Headers every answer with this code carries (e.g. a bearer challenge). */
  headers?: Record<string, string>;
}

const registry = new Map<string, DomainErrorDefinition>();

declare const defined: unique symbol;
/**
 * An error code that a module defined with {@link defineErrors}: the code's string, marked so that only a value
 * `defineErrors` returned has this type. `new DomainError('emial-taken', ...)` does not compile, where a typo would
 * otherwise have answered 500 (no module defines that code).
 */
export type ErrorCode<C extends string = string> = C & { readonly [defined]: true };

/**
 * Declares a module's error codes with the HTTP status each is answered with, in the module's own
 * `<feature>.errors.ts`, and returns the codes for `new DomainError(...)`. {@link ProblemDetailsFilter} answers
 * from this registry, so a new module adds its errors without touching a central file.
 */
export function defineErrors<const T extends Record<string, DomainErrorDefinition>>(
  errors: T,
): { readonly [K in keyof T]: ErrorCode<T[K]['code']> } {
  const codes: Record<string, string> = {};
  for (const [key, definition] of Object.entries(errors)) {
    if (registry.has(definition.code)) throw new Error(`error code "${definition.code}" is defined twice`);
    registry.set(definition.code, definition);
    codes[key] = definition.code;
  }
  return codes as { readonly [K in keyof T]: ErrorCode<T[K]['code']> };
}

/** How an error code is answered; `undefined` for a code no module defined (answered as a 500). */
export function domainErrorDefinition(code: string): DomainErrorDefinition | undefined {
  return registry.get(code);
}

export const CommonError = defineErrors({
  DatabaseUnavailable: { code: 'database-unavailable', status: 503 },
});

/** A coded error that services throw; the code's module defines its HTTP status. */
export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'DomainError';
  }
}

export interface FieldError {
  field: string;
  message: string;
}

/** Bad input at the edge: names every bad field (and, for an enumerated field, its allowed values). */
export class ValidationFailedError extends Error {
  constructor(readonly errors: FieldError[]) {
    super('The request has invalid fields');
    this.name = 'ValidationFailedError';
  }
}
