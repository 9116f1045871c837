import { Injectable } from '@nestjs/common';
import { Page, invalidValue, notFound, parsePage, isUuid } from '@app/common';
import { DeliveryState, OutboxRow, PushOutboxRepository } from '../notifications/push-outbox.repository';

export const DELIVERY_STATES: readonly DeliveryState[] = ['pending', 'sent', 'failed', 'deadLettered', 'discarded'];
const QUERY_PARAMETERS = ['startIndex', 'count', 'userId', 'state'];

/** The query of the delivery-state list, checked. */
export interface DeliveryQuery {
  page: Page;
  userId?: string;
  state?: DeliveryState;
}

/**
 * Delivery state of push notifications for an organization's administrators (DECISIONS 10.5): one
 * entry per notification and authenticator, newest first, paged, optionally of one person or in one
 * state.
 */
@Injectable()
export class PushDeliveryService {
  constructor(private readonly outbox: PushOutboxRepository) {}

  parseQuery(query: Record<string, unknown>): DeliveryQuery {
    const unknown = Object.keys(query).filter((key) => !QUERY_PARAMETERS.includes(key));
    if (unknown.length > 0) {
      throw invalidValue(`Unknown query parameter ${unknown[0].slice(0, 40)}; this list takes ${QUERY_PARAMETERS.join(', ')}.`);
    }
    const single = (name: string): string | undefined => {
      const value = query[name];
      if (value === undefined) return undefined;
      if (typeof value !== 'string') throw invalidValue(`Query parameter ${name} must be given once.`);
      return value;
    };
    const userId = single('userId');
    if (userId !== undefined && !isUuid(userId)) throw invalidValue(`Query parameter userId must be a user's id (a UUID), got "${userId.slice(0, 40)}".`);
    const state = single('state');
    if (state !== undefined && !DELIVERY_STATES.includes(state as DeliveryState)) {
      throw invalidValue(`Query parameter state must be one of ${DELIVERY_STATES.join(', ')}; got "${state.slice(0, 40)}".`);
    }
    return { page: parsePage({ startIndex: single('startIndex'), count: single('count') }), userId, state: state as DeliveryState | undefined };
  }

  list(orgId: string, query: DeliveryQuery): Promise<{ rows: OutboxRow[]; total: number }> {
    return this.outbox.page(orgId, { userId: query.userId, state: query.state }, query.page.startIndex, query.page.count);
  }

  async get(orgId: string, id: string): Promise<OutboxRow> {
    const row = await this.outbox.find(orgId, id);
    if (!row) throw notFound(`Push notification "${id}" does not exist in organization "${orgId}".`);
    return row;
  }
}
