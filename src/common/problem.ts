import { STATUS_CODES } from 'node:http';
import type { Response } from 'express';
import type { FieldError } from './domain-error';

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance: string;
  errors?: FieldError[];
}

export function problem(status: number, detail: string, instance: string, code?: string, errors?: FieldError[]): Problem {
  const body: Problem = {
    type: code ? `urn:problem-type:${code}` : 'about:blank',
    title: STATUS_CODES[status] ?? 'Error',
    status,
    detail,
    instance,
  };
  if (errors) body.errors = errors;
  return body;
}

export function sendProblem(res: Response, body: Problem, headers: Record<string, string> = {}): void {
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  res.status(body.status).type('application/problem+json').send(JSON.stringify(body));
}
