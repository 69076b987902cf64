import type { FactoryProvider } from '@nestjs/common';

/** Raised when the environment cannot be turned into a valid configuration; its message names the variable. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

export type Env = Record<string, string | undefined>;

/** The environment every configuration class is built from (`process.env`; tests provide their own). */
export const ENV = Symbol('ENV');

/**
 * A module's configuration: a class whose constructor reads and validates its variables from the environment
 * (throwing {@link ConfigError}), and which lists them in `variables` (docs/configuration.md and `.env.example` name each one).
 */
export interface ConfigClass<T = unknown> {
  new (env: Env): T;
  readonly variables: readonly string[];
}

const registry = new Set<ConfigClass>();

/** The provider of a module's configuration; registering it also puts it under {@link validateConfiguration}. */
export function configProvider<T>(type: ConfigClass<T>): FactoryProvider<T> {
  registry.add(type);
  return { provide: type, inject: [ENV], useFactory: (env: Env) => new type(env) };
}

/**
 * Builds every registered configuration once, before the application starts, so that bad variables stop the start
 * with one line naming them all. Modules register theirs when their files are imported.
 */
export function validateConfiguration(env: Env): void {
  const problems = [...registry].flatMap((type) => problemsOf(type, env));
  if (problems.length) throw new ConfigError(problems.join('; '));
}

/**
 * Every bad variable of one module. A module's constructor stops at its first; each message starts with the variable
 * it is about, so that variable is set aside (as if unset) and the module is built again, until it builds or a
 * message is about a variable already set aside (a rule between two variables, a requirement of production).
 */
export function problemsOf(type: ConfigClass, env: Env): string[] {
  const problems: string[] = [];
  const setAside: string[] = [];
  let rest = env;
  for (;;) {
    try {
      new type(rest);
      return problems;
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      if (setAside.some((name) => new RegExp(`\\b${name}\\b`).test(error.message))) return problems;
      problems.push(error.message);
      const variable = /^[A-Z][A-Z0-9_]*/.exec(error.message)?.[0];
      if (!variable || !type.variables.includes(variable)) return problems;
      setAside.push(variable);
      rest = { ...rest, [variable]: undefined };
    }
  }
}

/** Every environment variable the registered modules read. */
export function configVariables(): string[] {
  return [...registry].flatMap((type) => type.variables);
}

export function wholeSeconds(env: Env, name: string, fallback: number, min = 1): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) {
    throw new ConfigError(`${name} must be a whole number of seconds, got "${raw}"`);
  }
  const value = Number(raw.trim());
  if (!Number.isSafeInteger(value) || value < min) {
    throw new ConfigError(`${name} must be at least ${min}, got "${raw}"`);
  }
  return value;
}

/** A whole number of days, from `min` to 100 years (a larger one would overflow the epoch-millisecond columns' use). */
export function wholeDays(env: Env, name: string, fallback: number, min: number): number {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d{1,5}$/.test(raw)) throw new ConfigError(`${name} must be a whole number of days, got "${env[name]}"`);
  const value = Number(raw);
  if (value < min || value > 36_500) throw new ConfigError(`${name} must be from ${min} to 36500 days, got "${env[name]}"`);
  return value;
}

export function positiveInt(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw.trim()) || Number(raw) < 1) {
    throw new ConfigError(`${name} must be a positive whole number, got "${raw}"`);
  }
  return Number(raw.trim());
}

export function httpUrl(env: Env, name: string, fallback: string): string {
  const raw = env[name] || fallback;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(`${name} must be an absolute URL, got "${raw}"`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new ConfigError(`${name} must be an http or https URL, got "${raw}"`);
  }
  return raw.replace(/\/+$/, '');
}
