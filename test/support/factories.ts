import { randomUUID } from 'node:crypto';
import type { UserResponseDto } from '../../src/users/dto/user-response.dto';

/** An address no other test uses. */
export function uniqueEmail(tag = 'u'): string {
  return `${tag}-${randomUUID().slice(0, 12)}@example.com`;
}

/** A valid `POST /users` body with a fresh email and no `role` (the server's default). */
export function userBody(overrides: Record<string, unknown> = {}) {
  return { email: uniqueEmail('new'), password: 'a long enough password', name: 'New User', gender: 'other', age: 41, ...overrides };
}

/** A `PUT /users/{id}` body that keeps `user`'s profile (no password, no role) except for `overrides`. */
export function profileOf(user: Pick<UserResponseDto, 'email' | 'name' | 'gender' | 'age'>, overrides: Record<string, unknown> = {}) {
  return { email: user.email, name: user.name, gender: user.gender, age: user.age, ...overrides };
}

/** A valid `POST /users/{id}/orders` body. */
export function orderBody(overrides: Record<string, unknown> = {}) {
  return { item: 'Widget', quantity: 2, unitPriceCents: 150, currency: 'EUR', ...overrides };
}
