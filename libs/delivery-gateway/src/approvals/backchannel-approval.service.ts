import { Injectable } from '@nestjs/common';
import { createPublicKey } from 'node:crypto';
import { ApprovalAsk, ApprovalDevices, BackchannelAuthentication, PendingApproval } from '@app/auth';
import { DomainError, RequestOrigin, invalidValue, isoTimestamp, notFound, isUuid } from '@app/common';
import { Transaction } from '@app/persistence';
import { approvalReadSigningInput, approvalSigningInput, verifiesEs256 } from '../authenticators/authenticator-key';
import { AuthenticatorRepository, AuthenticatorRow } from '../authenticators/authenticator.repository';
import { PushNotifications } from '../notifications/push-notifications';

export const APPROVAL_SCHEMA = 'urn:vendor:scim:api:cms:1.0:BackchannelRequest';

export type Decision = 'approve' | 'deny';

/** A request as the app is shown it: what to display, and the exact texts it signs to decide. */
export function presentApproval(request: PendingApproval) {
  return {
    schemas: [APPROVAL_SCHEMA],
    id: request.id,
    clientId: request.clientId,
    scope: request.scope,
    bindingMessage: request.bindingMessage,
    state: request.state,
    created: isoTimestamp(request.createdAt),
    expiresAt: isoTimestamp(request.expiresAt),
    signingInputs: {
      approve: approvalSigningInput(request.org, request.id, 'approve'),
      deny: approvalSigningInput(request.org, request.id, 'deny'),
    },
  };
}

/**
 * The authenticator app's half of CIBA (DECISIONS 16). Asking: each of the person's authenticators
 * gets the gateway's `challenge` template through the push outbox, in the transaction of the
 * request (supplied to libs/auth as its ApprovalDevices). Answering: the app reads the request and
 * approves or denies it; each call carries an ES256 signature by the key of one of the person's
 * registered authenticators over a text naming the organization, the request and (to decide) the
 * decision. That signature is the call's whole authentication: only the app holding a registered key
 * of the person the request is for can make it. libs/auth then records the decision once.
 */
@Injectable()
export class BackchannelApprovalService {
  constructor(
    private readonly authenticators: AuthenticatorRepository,
    private readonly push: PushNotifications,
    private readonly backchannel: BackchannelAuthentication,
  ) {}

  register(devices: ApprovalDevices): void {
    devices.register((ask, tx) => this.ask(ask, tx));
  }

  /** The person's live authenticators get the `challenge` template; answers how many. */
  private ask(ask: ApprovalAsk, tx: Transaction): Promise<number> {
    return this.push.enqueue(
      {
        org: ask.org,
        userId: ask.userId,
        template: 'challenge',
        values: {
          requestId: ask.requestId,
          clientId: ask.clientId,
          bindingMessage: ask.bindingMessage ?? '',
          expiresAt: isoTimestamp(ask.expiresAt),
        },
        cause: 'backchannel.request',
      },
      tx,
    );
  }

  /** GET: the request, for the app holding `authenticatorId`, proven by its signature of `ciba-read.{org}.{id}`. */
  async read(org: string, requestId: string, authenticatorId: string | undefined, signature: string | undefined): Promise<PendingApproval> {
    const { request } = await this.proven(org, requestId, authenticatorId, signature, (id) => approvalReadSigningInput(org, id));
    return request;
  }

  /** POST decision: approve or deny, proven by the signature of `ciba-approval.{org}.{id}.{decision}`. */
  async decide(
    org: string,
    requestId: string,
    body: { authenticator?: unknown; decision?: unknown; signature?: unknown },
    origin: RequestOrigin,
  ): Promise<PendingApproval> {
    if (body.decision !== 'approve' && body.decision !== 'deny') throw invalidValue('Invalid decision: decision must be "approve" or "deny".');
    const decision: Decision = body.decision;
    const { authenticator } = await this.proven(org, requestId, text(body.authenticator), text(body.signature), (id) =>
      approvalSigningInput(org, id, decision),
    );
    return this.backchannel.decide(org, requestId, { userId: authenticator.user_id, authenticatorId: authenticator.id }, decision, origin);
  }

  /**
   * The request and the authenticator whose key signed `signingInput(requestId)`. An unknown request,
   * an unknown authenticator and an authenticator of another person get one 404, so a caller without
   * a registered key of the person learns nothing about which requests exist.
   */
  private async proven(
    org: string,
    requestId: string,
    authenticatorId: string | undefined,
    signature: string | undefined,
    signingInput: (requestId: string) => string,
  ): Promise<{ request: PendingApproval; authenticator: AuthenticatorRow }> {
    if (!authenticatorId) throw invalidValue('The authenticator is required: the id of the registered authenticator app whose key signs.');
    if (!signature) throw invalidValue(`The signature is required: ES256 over "${signingInput(requestId)}", r||s in base64url.`);
    const unknown = notFound(`No backchannel authentication request "${requestId.slice(0, 64)}" for the person of this authenticator.`);
    if (!isUuid(requestId) || !isUuid(authenticatorId)) throw unknown;
    const authenticator = await this.authenticators.findInOrg(org, authenticatorId);
    if (!authenticator) throw unknown;
    const request = await this.backchannel.forApproval(org, requestId, authenticator.user_id);
    if (!request) throw unknown;
    const key = createPublicKey({ key: { ...authenticator.public_key }, format: 'jwk' });
    if (!verifiesEs256(key, signingInput(request.id), signature)) {
      throw new DomainError(
        'FORBIDDEN',
        `The signature does not verify with the registered key of authenticator ${authenticator.id} over "${signingInput(request.id)}": sign that text with this app's key.`,
      );
    }
    return { request, authenticator };
  }
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}
