import { ConfigError, type Env } from '../../../config/env';

export type RegistrationMode = 'off' | 'token' | 'open';

/**
 * Dynamic client registration (RFC 7591): `REGISTRATION=off` (default: no `/register`), `token` (a request needs
 * `Authorization: Bearer <REGISTRATION_INITIAL_TOKEN>`) or `open` (public clients register without a token; with
 * the initial token, when one is set, confidential clients too).
 */
export class RegistrationConfig {
  static readonly variables = ['REGISTRATION', 'REGISTRATION_INITIAL_TOKEN'] as const;
  readonly mode: RegistrationMode;
  readonly initialToken: string | undefined;

  constructor(env: Env) {
    const mode = env.REGISTRATION || 'off';
    if (mode !== 'off' && mode !== 'token' && mode !== 'open') {
      throw new ConfigError(`REGISTRATION must be off, token or open, got "${mode}"`);
    }
    this.mode = mode;
    this.initialToken = env.REGISTRATION_INITIAL_TOKEN || undefined;
    if (this.initialToken !== undefined && this.initialToken.length < 32) {
      throw new ConfigError('REGISTRATION_INITIAL_TOKEN must be at least 32 characters');
    }
    if (mode === 'token' && !this.initialToken) throw new ConfigError('REGISTRATION=token needs REGISTRATION_INITIAL_TOKEN');
  }
}
