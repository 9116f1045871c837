import type { Transaction } from '@app/persistence';

/** The gateway's two message templates (DECISIONS 10). */
export type NotificationTemplate = 'credential' | 'challenge';

/** One notification to a person, fanned out to each of their authenticators. */
export interface PersonNotification {
  org: string;
  userId: string;
  template: NotificationTemplate;
  /** Values for the template's placeholders (e.g. the credential's state, a CIBA binding message). */
  values: Record<string, string>;
  /** What caused it, shown to administrators with its delivery state (e.g. `credential.revoked`). */
  cause: string;
}

/**
 * The port through which credential management and out-of-band approval send push notifications.
 * Written to the outbox in the caller's transaction, so a notification exists exactly when the
 * change that causes it commits; the sender delivers it afterwards.
 */
export abstract class PushNotifications {
  /** Queues the notification for each of the person's authenticators; answers how many were queued. */
  abstract enqueue(notification: PersonNotification, tx: Transaction): Promise<number>;
}
