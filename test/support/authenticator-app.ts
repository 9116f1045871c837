import { KeyObject, generateKeyPairSync, sign } from 'node:crypto';
import TestAgent from 'supertest/lib/agent';

const AUTHENTICATOR_SCHEMA = 'urn:vendor:scim:api:cms:1.0:Authenticator';

/**
 * A simulated mobile authenticator app (CREDENTIAL-MANAGEMENT.md "Authenticators"): an EC P-256 key
 * pair made here, registered through the person's own Self API with a signed challenge, and the
 * ES256 signatures (r||s, base64url) it makes to read and decide CIBA requests (DECISIONS 16).
 */
export class AuthenticatorApp {
  readonly privateKey: KeyObject;
  readonly jwk: Record<string, string>;
  id = '';

  constructor() {
    const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    this.privateKey = pair.privateKey;
    this.jwk = pair.publicKey.export({ format: 'jwk' }) as Record<string, string>;
  }

  sign(input: string): string {
    return sign('sha256', Buffer.from(input, 'utf8'), { key: this.privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url');
  }

  /** Registers through /Self/Authenticators with the person's token; answers this app, now with its id. */
  async register(http: TestAgent, personToken: string, operatingSystem = 'Android'): Promise<this> {
    const base = '/aims/rs/scim/v2/Self/Authenticators';
    const challenge = await http.post(`${base}/.challenge`).auth(personToken, { type: 'bearer' }).set('Accept', 'application/scim+json');
    if (challenge.status !== 200) throw new Error(`authenticator challenge failed: ${challenge.status} ${JSON.stringify(challenge.body)}`);
    const created = await http
      .post(base)
      .auth(personToken, { type: 'bearer' })
      .set('Content-Type', 'application/scim+json')
      .send(
        JSON.stringify({
          schemas: [AUTHENTICATOR_SCHEMA],
          displayName: 'Simulated phone',
          operatingSystem,
          pushHandle: `handle-${Math.random().toString(36).slice(2)}`,
          publicKey: { kty: 'EC', crv: 'P-256', x: this.jwk.x, y: this.jwk.y },
          challenge: challenge.body.challenge,
          signature: this.sign(challenge.body.signingInput),
        }),
      );
    if (created.status !== 201) throw new Error(`authenticator registration failed: ${created.status} ${JSON.stringify(created.body)}`);
    this.id = created.body.id;
    return this;
  }

  /** The body that approves or denies request `requestId` of `org`. */
  decision(org: string, requestId: string, decision: 'approve' | 'deny', signer: AuthenticatorApp = this) {
    return { authenticator: this.id, decision, signature: signer.sign(`ciba-approval.${org}.${requestId}.${decision}`) };
  }

  /** The headers that read request `requestId` of `org`. */
  readHeaders(org: string, requestId: string): Record<string, string> {
    return { 'Authenticator-ID': this.id, 'Authenticator-Signature': this.sign(`ciba-read.${org}.${requestId}`) };
  }
}
