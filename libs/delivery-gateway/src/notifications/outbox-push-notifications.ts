import { Injectable } from '@nestjs/common';
import { Clock } from '@app/common';
import { Transaction } from '@app/persistence';
import { OutboxSignal } from './outbox-signal';
import { PersonNotification, PushNotifications } from './push-notifications';
import { PushOutboxRepository } from './push-outbox.repository';

/**
 * PushNotifications through the outbox (DECISIONS 10.1): the rows are written in the caller's
 * transaction, so a notification exists exactly when its cause commits; each instance's
 * PushSender delivers them afterwards.
 */
@Injectable()
export class OutboxPushNotifications extends PushNotifications {
  constructor(
    private readonly outbox: PushOutboxRepository,
    private readonly clock: Clock,
    private readonly signal: OutboxSignal,
  ) {
    super();
  }

  async enqueue(notification: PersonNotification, tx: Transaction): Promise<number> {
    const queued = await this.outbox.enqueue(
      {
        orgId: notification.org,
        userId: notification.userId,
        template: notification.template,
        values: notification.values,
        cause: notification.cause,
        now: this.clock.now(),
      },
      tx,
    );
    if (queued > 0) tx.afterCommit(async () => this.signal.committed());
    return queued;
  }
}
