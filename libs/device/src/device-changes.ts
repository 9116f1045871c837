import { ChangeFeed, Transaction } from '@app/persistence';

/**
 * A device's key in the read cache and on the change feed: ids are UUIDs, which a client may write
 * in capitals, so the key is lower-case (as the database stores them).
 */
export function deviceKey(org: string, id: string): string {
  return `${org}/${id.toLowerCase()}`;
}

/**
 * With the commit of `tx`, every instance drops what it kept of these devices. Every write of this
 * library that moves or deletes a device calls it, the ports other libraries move devices through
 * included, so no caller outside the library needs to know the cache or its keys.
 */
export function publishDeviceChanges(changes: ChangeFeed, tx: Transaction, org: string, ids: readonly string[]): void {
  changes.publishOnCommit(
    tx,
    'device',
    ids.map((id) => deviceKey(org, id)),
  );
}
