import { scopeDescription } from '../../../auth/scopes';
import { isLoopbackRedirectUri } from '../../clients/redirect-uris';
import type { ConsentPageView } from '../../interaction/pages';
import type { AuthorizationRequestResult } from './authorization-request';

type ValidRequest = Extract<AuthorizationRequestResult, { kind: 'valid' }>;

/**
 * What the consent page shows of a request: the scopes `asked` (new to this client, or all with prompt=consent),
 * those allowed before, and what the person should know of a client that named itself (RFC 7591) or is named by
 * its metadata document's URL.
 */
export function consentPageView(request: ValidRequest, asked: string[], csrf: string): ConsentPageView {
  const requested = request.scope.split(' ');
  const view = (name: string) => ({ name, description: scopeDescription(name) });
  return {
    clientName: request.client.name,
    scopes: asked.map(view),
    alreadyAllowed: requested.filter((s) => !asked.includes(s)).map(view),
    csrf,
    // The whole request is approved: the code carries every requested scope, the consent grows by the new ones.
    params: { ...request.params, scope: request.scope },
    selfRegistered: request.client.registrationTokenHash !== null,
    ...(request.client.metadataDocument !== null
      ? {
          metadataDocument: {
            documentHost: new URL(request.client.id).host,
            redirectHost: new URL(request.redirectUri).host,
            loopbackOnly: request.client.redirectUris.every((uri) => isLoopbackRedirectUri(uri)),
          },
        }
      : {}),
  };
}
