import { Injectable } from '@nestjs/common';
import { PushNotifications } from '@app/delivery-gateway';
import { Transaction } from '@app/persistence';

/** What a content request's move tells its owner. */
export type RequestEvent = 'approved' | 'denied' | 'completed';
/** What a credential's move tells its owner. */
export type CredentialEvent = 'suspended' | 'revoked';

const REQUEST_CAUSES: Record<RequestEvent, string> = {
  approved: 'content_request.approve',
  denied: 'content_request.deny',
  completed: 'content_request.complete',
};
const CREDENTIAL_CAUSES: Record<CredentialEvent, string> = { suspended: 'credential.suspend', revoked: 'credential.revoke' };

/**
 * The `credential` push notification (DECISIONS 10.6; issue 25 item 3): the wallet owner's
 * authenticators are told when one of their content requests is approved, denied or completed and
 * when their credentials are suspended or revoked, in the transaction of that change (the
 * delivery-gateway outbox, through its PushNotifications port).
 */
@Injectable()
export class CredentialNotifications {
  constructor(private readonly push: PushNotifications) {}

  async contentRequest(org: string, request: { id: string; type: string; owner_user_id: string | null }, event: RequestEvent, tx: Transaction): Promise<void> {
    if (!request.owner_user_id) return;
    await this.push.enqueue(
      {
        org,
        userId: request.owner_user_id,
        template: 'credential',
        values: { event, subject: 'contentRequest', id: request.id, type: request.type, count: '0', message: `Your ${request.type} request was ${event}.` },
        cause: REQUEST_CAUSES[event],
      },
      tx,
    );
  }

  /** One notification per owner for the credentials one change moved together. */
  async credentials(
    org: string,
    credentials: readonly { id: string; type: string; owner_user_id: string | null }[],
    event: CredentialEvent,
    tx: Transaction,
  ): Promise<void> {
    const byOwner = new Map<string, { id: string; type: string }[]>();
    for (const credential of credentials) {
      if (!credential.owner_user_id) continue;
      byOwner.set(credential.owner_user_id, [...(byOwner.get(credential.owner_user_id) ?? []), credential]);
    }
    for (const [userId, owned] of byOwner) {
      const types = [...new Set(owned.map((credential) => credential.type))].join(', ');
      const message = owned.length === 1 ? `Your ${types} credential was ${event}.` : `${owned.length} of your credentials were ${event}.`;
      await this.push.enqueue(
        {
          org,
          userId,
          template: 'credential',
          values: { event, subject: 'credential', id: owned[0].id, type: types, count: String(owned.length), message },
          cause: CREDENTIAL_CAUSES[event],
        },
        tx,
      );
    }
  }
}
