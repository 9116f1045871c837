import type { Notification } from 'pg';
import { Change, ChangeFeed, Database } from '@app/persistence';
import { TestApp, createTestApp } from '@app/testing';

/**
 * A change made in a transaction is published with its COMMIT (ChangeFeed.publishOnCommit, one
 * round trip for the notices and the COMMIT): other instances, here a plain LISTEN connection,
 * hear of it only when it commits; this instance's subscribers once it has committed.
 */
describe('change feed: notices carried by the COMMIT', () => {
  let t: TestApp;
  let heard: string[];
  const listener = (message: Notification) => heard.push(message.payload ?? '');

  beforeAll(async () => {
    t = await createTestApp();
    t.db.on('notification', listener);
    await t.db.query('LISTEN platform_changes');
  });
  afterAll(async () => {
    t.db.off('notification', listener);
    await t.close();
  });
  beforeEach(() => (heard = []));

  const settle = () => new Promise((resolve) => setTimeout(resolve, 200));

  it('a committed transaction sends its notices; this instance hears of them after the commit, not before', async () => {
    const db = t.app.get(Database);
    const changes = t.app.get(ChangeFeed);
    const local: string[] = [];
    changes.subscribe((change: Change) => change.topic === 'device' && local.push(change.id));
    await db.transaction(async (tx) => {
      changes.publishOnCommit(tx, 'device', ['acme/one', "o'brien/two"]);
      await settle();
      expect(heard).toEqual([]);
      expect(local).toEqual([]);
    });
    await settle();
    expect(heard).toEqual(['device:acme/one', "device:o'brien/two"]);
    // Told once after the commit, and again when the instance's own LISTEN connection hears the notices.
    expect([...new Set(local)]).toEqual(['acme/one', "o'brien/two"]);
  });

  it('a rolled-back transaction sends nothing and tells nobody', async () => {
    const db = t.app.get(Database);
    const changes = t.app.get(ChangeFeed);
    const local: string[] = [];
    changes.subscribe((change: Change) => change.topic === 'device' && local.push(change.id));
    await expect(
      db.transaction(async (tx) => {
        changes.publishOnCommit(tx, 'device', ['acme/rolled-back']);
        throw new Error('the work failed');
      }),
    ).rejects.toThrow('the work failed');
    await settle();
    expect(heard).toEqual([]);
    expect(local).toEqual([]);
  });
});
