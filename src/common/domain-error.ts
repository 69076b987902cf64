/** Coded errors that services throw; {@link ProblemDetailsFilter} maps each code to HTTP in one switch. */
export enum DomainErrorCode {
  UserNotFound = 'user-not-found',
  OrderNotFound = 'order-not-found',
  EmailTaken = 'email-taken',
  AdminOnly = 'admin-only',
  RoleChangeForbidden = 'role-change-forbidden',
  UnknownPrincipal = 'unknown-principal',
  DatabaseUnavailable = 'database-unavailable',
}

export class DomainError extends Error {
  constructor(
    readonly code: DomainErrorCode,
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
