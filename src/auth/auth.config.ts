import { type Env, wholeSeconds } from '../config/env';

export class AuthConfig {
  static readonly variables = ['REVOCATION_SYNC_SECONDS'] as const;
  /** How stale this instance's view of revoked grants may be. */
  readonly revocationSyncSeconds: number;

  constructor(env: Env) {
    this.revocationSyncSeconds = wholeSeconds(env, 'REVOCATION_SYNC_SECONDS', 5);
  }
}
