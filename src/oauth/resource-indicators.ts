import { Injectable } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import type { Client } from './entities/client.entity';
import { OAuthError } from './oauth-error';

/** Why a `resource` value was refused; the caller answers `invalid_target` in its own way (redirect or JSON). */
export class InvalidTargetError extends Error {
  override name = 'InvalidTargetError';
}

/** RFC 8707 2: an absolute URI without a fragment (a query is discouraged but allowed). */
function isResourceUri(value: string): boolean {
  if (value.includes('#')) return false;
  try {
    return /^[a-z][a-z0-9+.-]*:$/.test(new URL(value).protocol);
  } catch {
    return false;
  }
}

/**
 * Resource indicators (RFC 8707): which resources a token is for. A client may name, at `/authorize` and at
 * `/token`, this service's API (`AUDIENCE`, also the default) and the resources registered for it
 * (`client:create --resource`); the access token's `aud` is what was named. Lists travel as space-separated
 * strings, like scopes (URIs hold no spaces): a repeated form parameter is joined that way, and the consent
 * form carries it so.
 */
@Injectable()
export class ResourceIndicators {
  constructor(private readonly config: AppConfig) {}

  /** This service's API (`AUDIENCE`): the resource of a grant whose request named none. */
  get api(): string {
    return this.config.audience;
  }

  /** The `resource` values of a request, checked against what `client` may name (none: an empty list). */
  requested(client: Client, raw: string | undefined): string[] {
    if (raw === undefined) return [];
    const values = [...new Set(raw.split(' ').filter(Boolean))];
    if (values.length === 0) throw new InvalidTargetError('resource is empty.');
    const bad = values.find((v) => !isResourceUri(v));
    if (bad !== undefined) throw new InvalidTargetError('resource must be an absolute URI without a fragment.');
    const allowed = this.allowedFor(client);
    if (values.some((v) => !allowed.has(v))) throw new InvalidTargetError('A requested resource is not allowed for this client.');
    return values;
  }

  /**
   * The `aud` of a token of a grant: the resources `requested` at the token endpoint (as {@link atTokenEndpoint}
   * checked them), which must be among the grant's (its authorization request's, or the API when it named none);
   * when none is requested, the grant's.
   */
  audienceFor(requested: string[], granted: string | null): string | string[] {
    const grantResources = granted ? granted.split(' ') : [];
    if (requested.length === 0) return this.audience(grantResources);
    const allowed = new Set(grantResources.length ? grantResources : [this.config.audience]);
    if (requested.some((r) => !allowed.has(r))) {
      throw new OAuthError('invalid_target', 'A requested resource was not part of the authorization.');
    }
    return this.audience(requested);
  }

  /** {@link requested}, refusing as the token endpoint answers (an `invalid_target` {@link OAuthError}). */
  atTokenEndpoint(client: Client, raw: string | undefined): string[] {
    try {
      return this.requested(client, raw);
    } catch (error) {
      if (error instanceof InvalidTargetError) throw new OAuthError('invalid_target', error.message);
      throw error;
    }
  }

  /** The `aud` of an access token for `resources`: the API when none, the one resource, or the list. */
  audience(resources: string[]): string | string[] {
    if (resources.length === 0) return this.config.audience;
    return resources.length === 1 ? resources[0] : resources;
  }

  /** What is stored with a grant: the list, or null when the request named none. */
  static stored(resources: string[]): string | null {
    return resources.length ? resources.join(' ') : null;
  }

  private allowedFor(client: Client): Set<string> {
    return new Set([this.config.audience, ...client.resources]);
  }
}
