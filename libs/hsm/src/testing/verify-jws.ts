import { createPublicKey, verify, type JsonWebKey } from 'node:crypto';
import type { SigningJwk } from '../signer.port';

/** Verifies a JWS signature the way a relying party would: node:crypto and the published JWK only. */
export function verifiesJws(jwk: SigningJwk, signingInput: Buffer, signature: Buffer): boolean {
  const key = createPublicKey({ key: { ...jwk } as JsonWebKey, format: 'jwk' });
  // ES256 signatures are raw r||s (RFC 7518 §3.4); dsaEncoding is ignored for RSA.
  return verify('sha256', signingInput, { key, dsaEncoding: 'ieee-p1363' }, signature);
}

/** Polls until `condition` holds; the reconnect runs in the background on timers. */
export async function waitUntil(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) {
      throw new Error(`condition not met within ${timeoutMs} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
