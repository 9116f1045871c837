import { isoTimestamp, listResponse, Page } from '@app/common';
import { OutboxRow } from '../notifications/push-outbox.repository';

export const PUSH_NOTIFICATION_SCHEMA = 'urn:vendor:scim:api:idp:2.0:PushNotification';
export const PUSH_NOTIFICATION_RESOURCE_TYPE = 'PushNotification';

/**
 * A notification's delivery state as administrators read it (DECISIONS 10.5). The template's values
 * are not shown (they may carry what the person was asked to approve); the push handle never is.
 */
export class PushDeliveryPresenter {
  constructor(private readonly baseUrl: string) {}

  location(orgId: string, id: string): string {
    return `${this.baseUrl}/configuration/${orgId}/v2/DeliveryGateway/Notifications/${id}`;
  }

  notification(row: OutboxRow) {
    return {
      schemas: [PUSH_NOTIFICATION_SCHEMA],
      id: row.id,
      template: row.template,
      cause: row.cause,
      user: { value: row.user_id },
      authenticator: row.authenticator_id ? { value: row.authenticator_id } : null,
      gateway: row.gateway_id ? { value: row.gateway_id } : null,
      state: row.state,
      attempts: row.attempts,
      nextAttemptAt: row.state === 'pending' ? isoTimestamp(row.due_at) : null,
      lastStatus: row.last_status,
      lastError: row.last_error,
      sentAt: row.sent_at ? isoTimestamp(row.sent_at) : null,
      meta: {
        resourceType: PUSH_NOTIFICATION_RESOURCE_TYPE,
        created: isoTimestamp(row.created_at),
        lastModified: isoTimestamp(row.updated_at),
        location: this.location(row.org_id, row.id),
      },
    };
  }

  list(rows: OutboxRow[], total: number, page: Page) {
    return listResponse(
      rows.map((row) => this.notification(row)),
      total,
      page,
    );
  }
}
