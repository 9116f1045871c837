import { EventEmitter } from 'node:events';
import type { Pool, PoolClient } from 'pg';
import type { Transaction } from './database';

/**
 * What changed: an access token (revoked), a subject (system account or user: disabled, role,
 * groups, deleted, its secrets or certificates changed), an organization (settings, deleted), a
 * device (moved, deleted), a lockout counter key (a failure was counted), an organization's CA
 * (created, its certificate installed, renewed, a generation revoked), an issued certificate (revoked, held, released; id
 * `{org}/{serial}`), an organization's push delivery gateways (created, replaced, deleted) or a
 * token-signing key (generated, activated, retired; id: its kid).
 */
export type ChangeTopic = 'token' | 'subject' | 'organization' | 'device' | 'lockout' | 'ca' | 'certificate' | 'gateway' | 'policy' | 'signing-key';
const TOPICS: readonly string[] = [
  'token',
  'subject',
  'organization',
  'device',
  'lockout',
  'ca',
  'certificate',
  'gateway',
  'policy',
  'signing-key',
] satisfies ChangeTopic[];
export type Change = { topic: ChangeTopic; id: string } | { topic: 'reset' };

const CHANNEL = 'platform_changes';
const RECONNECT_DELAY_MS = 1000;

/**
 * Cross-instance invalidation for in-process caches, over PostgreSQL LISTEN/NOTIFY. A writer
 * publishes a change in the transaction that makes it, with its COMMIT (publishOnCommit): the
 * notices go out if and only if the change commits, so no crash or failure between a commit and a
 * later notice can leave other instances serving what was changed, and a change that committed is
 * never answered with an error because its notice failed. The change reaches this instance's
 * subscribers once committed and every other instance's within milliseconds. While the listening
 * connection is down the feed is not `live`, and caches must not serve from memory (they read the
 * database instead); each (re)connection and each loss emits `reset`.
 */
export class ChangeFeed {
  private readonly events = new EventEmitter();
  private listener?: PoolClient;
  private stopped = false;
  private reconnectTimer?: NodeJS.Timeout;
  private connecting?: Promise<void>;

  constructor(private readonly pool: Pool) {
    this.events.setMaxListeners(50);
  }

  get live(): boolean {
    return this.listener !== undefined;
  }

  subscribe(handler: (change: Change) => void): void {
    this.events.on('change', handler);
  }

  /**
   * Publishes a change made in `tx` with its COMMIT (Transaction.notifyOnCommit): other instances
   * hear of it only if it commits, this one once it has. A single write publishes through a
   * transaction too: the notices ride on its COMMIT, so that costs no round trip.
   */
  publishOnCommit(tx: Transaction, topic: ChangeTopic, ids: readonly string[]): void {
    tx.notifyOnCommit(
      CHANNEL,
      ids.map((id) => `${topic}:${id}`),
    );
    tx.afterCommit(async () => {
      for (const id of ids) this.events.emit('change', { topic, id } satisfies Change);
    });
  }

  async start(): Promise<void> {
    this.stopped = false;
    await this.connect();
  }

  /**
   * Waits for a (re)connection under way, so that no client it takes outlives the feed: a pool
   * with a client never released never ends, and the shutdown would wait for it until its deadline.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.reconnectTimer);
    await this.connecting;
    const listener = this.listener;
    this.listener = undefined;
    if (listener) {
      await listener.query(`UNLISTEN ${CHANNEL}`).catch(() => undefined);
      listener.release();
    }
  }

  /** One connection attempt at a time; `stop` waits for it. */
  private connect(): Promise<void> {
    this.connecting ??= this.listen().finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  private async listen(): Promise<void> {
    let client: PoolClient | undefined;
    try {
      client = await this.pool.connect();
      const connected = client;
      connected.on('notification', (message) => {
        const [topic, ...rest] = (message.payload ?? '').split(':');
        if (TOPICS.includes(topic)) this.events.emit('change', { topic: topic as ChangeTopic, id: rest.join(':') } satisfies Change);
      });
      connected.on('error', () => this.lost(connected));
      connected.on('end', () => this.lost(connected));
      await connected.query(`LISTEN ${CHANNEL}`);
      if (this.stopped) {
        connected.release(true);
        return;
      }
      this.listener = connected;
      // Anything may have changed while nobody listened.
      this.events.emit('change', { topic: 'reset' } satisfies Change);
    } catch {
      // A client taken before the failure goes back to the pool, broken, or the pool never ends.
      client?.release(true);
      this.scheduleReconnect();
    }
  }

  private lost(client: PoolClient): void {
    if (this.listener !== client) return;
    this.listener = undefined;
    this.events.emit('change', { topic: 'reset' } satisfies Change);
    client.release(true);
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.stopped) return;
    clearTimeout(this.reconnectTimer);
    this.reconnectTimer = setTimeout(() => void this.connect(), RECONNECT_DELAY_MS);
    this.reconnectTimer.unref();
  }
}
