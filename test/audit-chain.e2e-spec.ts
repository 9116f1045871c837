import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { AuditChainer, AuditEvent, AuditLog, AuditVerifier, ChainRow, CHAIN_COLUMNS, eventDigest } from '@app/audit';
import { Database } from '@app/persistence';
import { TestApp, createTestApp } from '@app/testing';

/**
 * The audit log's hash chain (DECISIONS 11.2, issue 36): writers on two instances insert events
 * concurrently without waiting for one another, the chainers of both instances link them (one pass
 * at a time), and the chain verifies; an UPDATE, a DELETE or an INSERT made behind the service's
 * back is found and the event named.
 */
describe('audit hash chain (DECISIONS 11.2)', () => {
  let a: TestApp;
  let b: TestApp;
  let counter = 0;
  const newOrg = () => `chain_${++counter}_${randomBytes(3).toString('hex')}`;
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  beforeAll(async () => {
    const env = { AUDIT_CHAIN_INTERVAL_MS: '20' };
    a = await createTestApp({ env });
    b = await createTestApp({ env, databaseUrl: a.databaseUrl, clock: a.clock, shareHsmWith: a });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  const event = (org: string | null, n: number): AuditEvent => ({
    org,
    actor: 'system',
    action: 'system_account.update',
    target: `t${n}`,
    outcome: 'success',
    details: { n, nested: { z: 1, a: [1, 'two', null] }, text: 'ünïcode ✓' },
  });

  /** Writes `count` events for `org` through `t`'s AuditLog, each in its own transaction. */
  async function write(t: TestApp, org: string | null, count: number, holdMs = 0) {
    const db = t.app.get(Database);
    const audit = t.app.get(AuditLog);
    for (let i = 0; i < count; i++) {
      await db.transaction(async (tx) => {
        await audit.record(event(org, i), tx);
        if (holdMs > 0) await sleep(Math.floor(Math.random() * holdMs));
      });
    }
  }

  async function chained(org: string | null): Promise<ChainRow[]> {
    const { rows } = await a.db.query<ChainRow>(
      `SELECT ${CHAIN_COLUMNS} FROM audit_events WHERE org_id IS NOT DISTINCT FROM $1 ORDER BY audit_events.chain_seq`,
      [org],
    );
    return rows;
  }

  /** Waits until the timers of both instances have chained every event of `org`. */
  async function settled(org: string | null): Promise<void> {
    for (let i = 0; i < 200; i++) {
      const { rows } = await a.db.query<{ n: number }>('SELECT count(*)::int AS n FROM audit_events WHERE digest IS NULL AND org_id IS NOT DISTINCT FROM $1', [
        org,
      ]);
      if (rows[0].n === 0) return;
      await sleep(25);
    }
    throw new Error(`events of ${org} were not chained within 5 s`);
  }

  /** A change made by whoever holds the database, past the append-only trigger. */
  async function behindTheServicesBack(sql: string, parameters: unknown[] = []) {
    const db = new Client({ connectionString: a.databaseUrl });
    await db.connect();
    try {
      await db.query('BEGIN');
      await db.query('ALTER TABLE audit_events DISABLE TRIGGER audit_events_no_change');
      await db.query(sql, parameters);
      await db.query('ALTER TABLE audit_events ENABLE TRIGGER audit_events_no_change');
      await db.query('COMMIT');
    } finally {
      await db.end();
    }
  }

  async function chainOf(org: string, events: number): Promise<ChainRow[]> {
    await write(a, org, events);
    await settled(org);
    return chained(org);
  }

  it('4 concurrent writers on 2 instances, both chainers running: every event is chained once, positions 1..n, and the chain verifies', async () => {
    const org = newOrg();
    const perWriter = 30;
    // Each transaction holds its event up to 15 ms before committing, so commits overtake one another.
    await Promise.all([
      write(a, org, perWriter, 15),
      write(a, org, perWriter, 15),
      write(b, org, perWriter, 15),
      write(b, org, perWriter, 15),
      write(b, null, 10, 5),
    ]);
    await settled(org);
    const rows = await chained(org);
    expect(rows).toHaveLength(4 * perWriter);
    expect(rows.map((row) => Number(row.chain_seq))).toEqual(Array.from({ length: 4 * perWriter }, (_, i) => i + 1));
    expect(new Set(rows.map((row) => row.id)).size).toBe(4 * perWriter);
    const verification = await a.app.get(AuditVerifier).verifyChain(org);
    expect(verification).toEqual({
      org,
      verified: true,
      from: 1,
      events: 4 * perWriter,
      head: { seq: 4 * perWriter, digest: rows[rows.length - 1].digest },
      unchained: 0,
    });
    // The platform's own events (no organization) form a chain of their own, which verifies too.
    await settled(null);
    expect(await b.app.get(AuditVerifier).verifyChain(null)).toMatchObject({ org: null, verified: true, unchained: 0 });
  });

  it('an event whose transaction commits late, after a higher id was chained, is chained at the next pass, not skipped', async () => {
    const org = newOrg();
    const late = new Client({ connectionString: a.databaseUrl });
    await late.connect();
    try {
      await late.query('BEGIN');
      const { rows } = await late.query<{ id: string }>(
        `INSERT INTO audit_events (occurred_at, org_id, actor, action, code, outcome) VALUES (now(), $1, 'system', 'system_account.update', 0, 'success') RETURNING id::text AS id`,
        [org],
      );
      const lateId = rows[0].id;
      await write(b, org, 2);
      await settled(org);
      expect((await chained(org)).map((row) => row.id)).not.toContain(lateId);
      await late.query('COMMIT');
      await settled(org);
      const chain = await chained(org);
      expect(chain.map((row) => [row.id, Number(row.chain_seq)])).toEqual([
        [expect.any(String), 1],
        [expect.any(String), 2],
        [lateId, 3],
      ]);
      expect(BigInt(chain[0].id)).toBeGreaterThan(BigInt(lateId));
      expect(await a.app.get(AuditVerifier).verifyChain(org)).toMatchObject({ verified: true, events: 3 });
    } finally {
      await late.end();
    }
  });

  it('one pass at a time: while another instance holds the pass, chainOnce skips instead of waiting', async () => {
    const holder = new Client({ connectionString: a.databaseUrl });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query("SELECT pg_advisory_xact_lock(hashtextextended('audit-chain', 0))");
      expect(await a.app.get(AuditChainer).chainOnce()).toBeUndefined();
      await holder.query('ROLLBACK');
      // The timers of both instances offer passes too: one of ours gets it within a few tries.
      let chainedNow: number | undefined;
      for (let i = 0; i < 50 && chainedNow === undefined; i++) chainedNow = await a.app.get(AuditChainer).chainOnce();
      expect(chainedNow).toEqual(expect.any(Number));
    } finally {
      await holder.end();
    }
  });

  it('the table still refuses every other UPDATE and every DELETE: content cannot change along with the chain columns, chained columns cannot be rewritten', async () => {
    const org = newOrg();
    const [first] = await chainOf(org, 1);
    await expect(a.db.query('UPDATE audit_events SET digest = $2 WHERE id = $1', [first.id, 'f'.repeat(64)])).rejects.toThrow('audit_events is append-only');
    await expect(a.db.query('DELETE FROM audit_events WHERE id = $1', [first.id])).rejects.toThrow('audit_events is append-only');
    const holder = new Client({ connectionString: a.databaseUrl });
    await holder.connect();
    try {
      // An unchained row: the chain columns may be filled in, but not together with a change of its content.
      await holder.query('BEGIN');
      await holder.query("SELECT pg_advisory_xact_lock(hashtextextended('audit-chain', 0))");
      const { rows } = await a.db.query<{ id: string }>(
        `INSERT INTO audit_events (occurred_at, org_id, actor, action, code, outcome) VALUES (now(), $1, 'system', 'system_account.update', 0, 'success') RETURNING id::text AS id`,
        [org],
      );
      await expect(
        a.db.query("UPDATE audit_events SET chain_seq = 2, prev_digest = $2, digest = $2, actor = 'someone-else' WHERE id = $1", [rows[0].id, first.digest]),
      ).rejects.toThrow('audit_events is append-only');
    } finally {
      await holder.query('ROLLBACK');
      await holder.end();
    }
    await settled(org);
    expect(await a.app.get(AuditVerifier).verifyChain(org)).toMatchObject({ verified: true, events: 2 });
  });

  it('an UPDATE of one event is found and the event named', async () => {
    const org = newOrg();
    const chain = await chainOf(org, 6);
    await behindTheServicesBack(`UPDATE audit_events SET details = details || '{"n": 99}' WHERE id = $1`, [chain[2].id]);
    expect(await a.app.get(AuditVerifier).verifyChain(org)).toMatchObject({
      verified: false,
      events: 2,
      problem: { kind: 'changed', chainSeq: 3, eventId: chain[2].id, detail: expect.stringContaining(`event ${chain[2].id} (chain position 3)`) },
    });
  });

  it('an UPDATE whose digest is recomputed too is found at the link after it', async () => {
    const org = newOrg();
    const chain = await chainOf(org, 6);
    const forged = { ...chain[2], outcome: 'failure' };
    await behindTheServicesBack(`UPDATE audit_events SET outcome = 'failure', digest = $2 WHERE id = $1`, [
      chain[2].id,
      eventDigest(forged, chain[2].prev_digest!),
    ]);
    expect(await a.app.get(AuditVerifier).verifyChain(org)).toMatchObject({ verified: false, problem: { kind: 'changed', chainSeq: 3, eventId: chain[2].id } });
  });

  it('a DELETE of one event is found and its place named between its neighbours', async () => {
    const org = newOrg();
    const chain = await chainOf(org, 6);
    await behindTheServicesBack('DELETE FROM audit_events WHERE id = $1', [chain[3].id]);
    expect(await a.app.get(AuditVerifier).verifyChain(org)).toMatchObject({
      verified: false,
      events: 3,
      problem: { kind: 'removed', chainSeq: 4, after: chain[2].id, before: chain[4].id, detail: expect.stringContaining('chain position 4 is missing') },
    });
  });

  it('an INSERT between two events, linked and with a valid digest of its own, is found and named', async () => {
    const org = newOrg();
    const chain = await chainOf(org, 6);
    const before = chain[2];
    // Make room at position 4 and put a forged event there that links to position 3.
    await behindTheServicesBack('UPDATE audit_events SET chain_seq = chain_seq + 1000 WHERE org_id = $1 AND chain_seq >= 4', [org]);
    await behindTheServicesBack('UPDATE audit_events SET chain_seq = chain_seq - 999 WHERE org_id = $1 AND chain_seq > 1000', [org]);
    const { rows } = await a.db.query<{ id: string }>("SELECT nextval('audit_events_id_seq')::text AS id");
    const inserted: ChainRow = {
      ...before,
      id: rows[0].id,
      actor: 'forger',
      target: 'x',
      details: {},
      occurred: '2030-01-01T00:00:00.000000Z',
      chain_seq: '4',
      prev_digest: before.digest,
      digest: null,
    };
    inserted.digest = eventDigest(inserted, before.digest!);
    await a.db.query(
      `INSERT INTO audit_events (id, occurred_at, org_id, actor, action, code, target, outcome, details, chain_seq, prev_digest, digest)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
      [
        inserted.id,
        inserted.occurred,
        org,
        inserted.actor,
        inserted.action,
        inserted.code,
        inserted.target,
        inserted.outcome,
        inserted.details,
        4,
        inserted.prev_digest,
        inserted.digest,
      ],
    );
    expect(await a.app.get(AuditVerifier).verifyChain(org)).toMatchObject({
      verified: false,
      events: 4,
      problem: { kind: 'inserted', chainSeq: 4, eventId: inserted.id, detail: expect.stringContaining(`event ${inserted.id} (chain position 4) was inserted`) },
    });
  });

  it('--from starts the walk at a later position, anchored on the digest stored there', async () => {
    const org = newOrg();
    const chain = await chainOf(org, 5);
    await behindTheServicesBack(`UPDATE audit_events SET actor = 'x' WHERE id = $1`, [chain[0].id]);
    const verifier = a.app.get(AuditVerifier);
    expect(await verifier.verifyChain(org, 1)).toMatchObject({ verified: false, problem: { kind: 'changed', eventId: chain[0].id } });
    expect(await verifier.verifyChain(org, 2)).toMatchObject({ verified: true, from: 2, events: 4, head: { seq: 5, digest: chain[4].digest } });
  });
});
