import { CANONICAL_PREFIX } from '@app/common';
import { SyncOutcome } from './sync-session.service';
import { SYNC_SESSION_SCHEMA } from './sync-session.schema';

const pem = (der: Buffer) =>
  `-----BEGIN CERTIFICATE-----\n${der
    .toString('base64')
    .match(/.{1,64}/g)!
    .join('\n')}\n-----END CERTIFICATE-----\n`;

/**
 * The answer of POST /SyncSession (CREDENTIAL-MANAGEMENT.md "SyncSession"): the request's and the
 * device's new statuses, and each credential created, with its certificate (DER, PEM and the CA
 * chain) or, this once, its OATH secret (base32) and otpauth URI; and, this once, a smart card's
 * administration key (DECISIONS 17.1).
 */
export class SyncSessionPresenter {
  constructor(private readonly baseUrl: string) {}

  session(outcome: SyncOutcome) {
    return {
      schemas: [SYNC_SESSION_SCHEMA],
      id: outcome.id,
      contentRequest: {
        value: outcome.request.id,
        status: outcome.request.status,
        $ref: `${this.baseUrl}${CANONICAL_PREFIX}/ContentRequest/${outcome.request.id}`,
      },
      device: {
        value: outcome.device.id,
        status: outcome.device.status,
        $ref: `${this.baseUrl}${CANONICAL_PREFIX}/Device/${outcome.device.id}`,
        ...(outcome.device.adminKey ? { adminKey: outcome.device.adminKey } : {}),
      },
      credentials: outcome.credentials.map((credential) => ({
        value: credential.id,
        type: credential.type,
        status: credential.status,
        $ref: `${this.baseUrl}${CANONICAL_PREFIX}/Credential/${credential.id}`,
        ...(credential.der
          ? {
              certificate: {
                value: credential.der.toString('base64'),
                pem: pem(credential.der),
                chain: outcome.caCertificate ? [pem(outcome.caCertificate)] : [],
              },
            }
          : {}),
        ...(credential.secret ? { secret: credential.secret, otpauthUri: credential.otpauthUri } : {}),
      })),
    };
  }
}
