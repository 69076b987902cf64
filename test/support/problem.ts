import { STATUS_CODES } from 'node:http';
import type { Response } from 'supertest';
import { expect } from 'vitest';

export const PROBLEM_CONTENT_TYPE = /^application\/problem\+json(;|$)/;
const PROBLEM_KEYS = ['detail', 'instance', 'status', 'title', 'type'];

/**
 * Asserts an RFC 9457 answer as this service gives it: the status, `Content-Type: application/problem+json`, an
 * `X-Request-Id`, and a body of exactly type/title/status/detail/instance (plus `errors` for validation errors).
 * `instance` is the request path without its query string.
 */
export function expectProblem(res: Response, status: number, instance: string, options: { errors?: boolean } = {}): void {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.headers['content-type']).toMatch(PROBLEM_CONTENT_TYPE);
  expect(res.headers['x-request-id']).toEqual(expect.stringMatching(/\S/));
  const keys = options.errors ? [...PROBLEM_KEYS, 'errors'].sort() : PROBLEM_KEYS;
  expect(Object.keys(res.body).sort()).toEqual(keys);
  expect(res.body.status).toBe(status);
  expect(res.body.title).toBe(STATUS_CODES[status]);
  expect(res.body.type).toEqual(expect.stringMatching(/\S/));
  expect(res.body.detail).toEqual(expect.stringMatching(/\S/));
  expect(res.body.instance).toBe(instance);
}

/** A 400 validation problem whose `errors[]` names exactly `fields` (each once), and returns the errors by field. */
export function expectValidationProblem(res: Response, instance: string, fields: string[]): Record<string, string> {
  expectProblem(res, 400, instance, { errors: true });
  const errors = res.body.errors as { field: string; message: string }[];
  for (const error of errors) {
    expect(Object.keys(error).sort()).toEqual(['field', 'message']);
    expect(error.message).toEqual(expect.stringMatching(/\S/));
  }
  expect(errors.map((e) => e.field).sort()).toEqual([...fields].sort());
  return Object.fromEntries(errors.map((e) => [e.field, e.message]));
}

/** Asserts that an error message names every allowed value of an enumerated field. */
export function expectListsValues(message: string, values: readonly string[]): void {
  for (const value of values) expect(message).toMatch(new RegExp(`\\b${value}\\b`));
}
