import type { Response } from 'express';
import { DpopProofError, type DpopProofs } from '../auth/dpop-proofs.service';
import { OAuthError } from './oauth-error';

/**
 * RFC 9449 at an endpoint of the authorization server (`/token`, `/par`): the thumbprint of the key of the
 * request's DPoP proof for `POST htu`, or undefined without a proof. With nonces on, the answer names the current
 * one (`DPoP-Nonce`) and a proof without it is refused with `use_dpop_nonce`; any other fault is
 * `invalid_dpop_proof`.
 */
export async function proofKeyAt(
  proofs: DpopProofs,
  header: string | string[] | undefined,
  htu: string,
  res: Response,
): Promise<string | undefined> {
  const nonce = proofs.currentNonce();
  if (nonce !== undefined) res.setHeader('DPoP-Nonce', nonce);
  if (header === undefined) return undefined;
  try {
    return await proofs.check(header, { htm: 'POST', htu, nonce: nonce !== undefined });
  } catch (error) {
    if (!(error instanceof DpopProofError)) throw error;
    throw new OAuthError(error.useNonce ? 'use_dpop_nonce' : 'invalid_dpop_proof', error.description);
  }
}
