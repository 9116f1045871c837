import { execFile } from 'node:child_process';
import { createPublicKey, randomBytes, verify } from 'node:crypto';
import { join, resolve } from 'node:path';
import { Client } from 'pg';
import { AuditChainer, AuditEvent, AuditLog, AuditVerifier, ChainRow, CHAIN_COLUMNS, CHAIN_SELECT, CHAIN_UPDATE, canonicalJson, eventDigest } from '@app/audit';
import { Database } from '@app/persistence';
import { PLATFORM_ADMIN_SECRET, TestApp, createTestApp, platformAdminToken } from '@app/testing';

const CLI = join(resolve(__dirname, '..'), 'dist/apps/cli/src/main.js');

/**
 * The audit log's hash chain (DECISIONS 11.2, issue 36): writers on two instances insert events
 * concurrently without waiting for one another, the chainers of both instances link them (one pass
 * at a time), and the chain verifies; an UPDATE, a DELETE or an INSERT made behind the service's
 * back is found and the event named. Chain heads are signed in the HSM at checkpoints, and a
 * checkpoint whose signature was altered, a truncation or a recomputed chain are refused.
 */
describe('audit hash chain (DECISIONS 11.2)', () => {
  let a: TestApp;
  let b: TestApp;
  let counter = 0;
  const newOrg = () => `chain_${++counter}_${randomBytes(3).toString('hex')}`;
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  beforeAll(async () => {
    // A checkpoint every 5 events (or 60 s of the fake clock).
    const env = { AUDIT_CHAIN_INTERVAL_MS: '20', AUDIT_CHECKPOINT_EVENTS: '5', AUDIT_CHECKPOINT_INTERVAL_S: '60' };
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
      // Both append-only triggers: the row-level one for DELETE, the statement-level one for UPDATE.
      await db.query('ALTER TABLE audit_events DISABLE TRIGGER audit_events_no_change, DISABLE TRIGGER audit_events_chain_only');
      await db.query(sql, parameters);
      await db.query('ALTER TABLE audit_events ENABLE TRIGGER audit_events_no_change, ENABLE TRIGGER audit_events_chain_only');
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
      checkpoints: expect.any(Number),
      lastCheckpoint: { seq: expect.any(Number), digest: expect.any(String), signedAt: expect.any(String) },
    });
    // Signed heads along the way (every 5 events), and the last one is the digest at its position.
    expect(verification.checkpoints).toBeGreaterThanOrEqual(1);
    expect(rows[verification.lastCheckpoint!.seq - 1].digest).toBe(verification.lastCheckpoint!.digest);
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

  it('a pass reads and updates its events through the index of unchained events, not by scanning the table, whatever the table holds (issue 35)', async () => {
    const db = new Client({ connectionString: a.databaseUrl });
    await db.connect();
    try {
      // In a transaction rolled back at the end: 30,000 chained events of another organization and a
      // backlog of 2,000 unchained ones, the planner's statistics taken with them.
      await db.query('BEGIN');
      const org = newOrg();
      await db.query(
        `INSERT INTO audit_events (occurred_at, org_id, actor, action, code, outcome, chain_seq, prev_digest, digest)
         SELECT now(), $1, 'system', 'system_account.update', 0, 'success', i, md5(i::text), md5((i + 1)::text) FROM generate_series(1, 30000) i`,
        [`${org}_history`],
      );
      const { rows } = await db.query<{ id: string }>(
        `INSERT INTO audit_events (occurred_at, org_id, actor, action, code, outcome)
         SELECT now(), $1, 'system', 'system_account.update', 0, 'success' FROM generate_series(1, 2000) RETURNING id::text AS id`,
        [org],
      );
      await db.query('ANALYZE audit_events');
      const ids = rows.map((row) => row.id);
      // The service plans its statements once (PLAN_CACHE_MODE, a generic plan); a plan for these very values too.
      const statements = [
        { name: 'select', text: CHAIN_SELECT, values: [] },
        { name: 'update', text: CHAIN_UPDATE, values: [ids, ids.map((_, i) => i + 1), ids.map(() => 'prev'), ids.map(() => 'digest')] },
      ];
      for (const [mode, { name, text, values }] of ['force_generic_plan', 'force_custom_plan'].flatMap((mode) =>
        statements.map((statement) => [mode, statement] as const),
      )) {
        await db.query(`SET LOCAL plan_cache_mode = ${mode}`);
        const { rows: plan } = await db.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>({
          name: `chain-${name}-${mode}`,
          text: `EXPLAIN (FORMAT JSON) ${text}`,
          values,
        });
        const scans = planNodes(plan[0]['QUERY PLAN'][0].Plan).filter((node) => node['Relation Name'] === 'audit_events' && node['Node Type'].endsWith('Scan'));
        expect([name, mode, scans.map((node) => [node['Node Type'], node['Index Name']])]).toEqual([
          name,
          mode,
          [[expect.stringMatching(/^Index (Only )?Scan$/), 'audit_events_unchained_idx']],
        ]);
      }
    } finally {
      await db.query('ROLLBACK').catch(() => undefined);
      await db.end();
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

  /**
   * A value of `column` other than the stored one, for an UPDATE of a single column: the refusal must
   * come from the append-only trigger, not from a constraint (outcome's CHECK, the primary key).
   */
  function changed(column: string, type: string): string {
    if (column === 'outcome') return "CASE outcome WHEN 'success' THEN 'failure' ELSE 'success' END";
    switch (type) {
      case 'bigint':
      case 'integer':
      case 'smallint':
        return `-${column} - 1`;
      case 'text':
        return `coalesce(${column}, '') || '-changed'`;
      case 'timestamp with time zone':
        return `${column} + interval '1 second'`;
      case 'jsonb':
        return `${column} || '{"changed": true}'`;
      default:
        throw new Error(`audit_events.${column} is of type ${type}: give this test a changed value for it`);
    }
  }

  it("the UPDATE rule covers every column but the chain's, read from information_schema: changing any one is refused, of a chained and of an unchained event, also together with the chain columns; the chainer's own update passes", async () => {
    const org = newOrg();
    const [first] = await chainOf(org, 1);
    const { rows: columns } = await a.db.query<{ column_name: string; data_type: string }>(
      `SELECT column_name, data_type FROM information_schema.columns
        WHERE table_schema = current_schema() AND table_name = 'audit_events' AND column_name NOT IN ('chain_seq', 'prev_digest', 'digest')
        ORDER BY ordinal_position`,
    );
    // The columns known today are among them (a column added later is tested as well, by its type).
    expect(columns.map((column) => column.column_name)).toEqual(
      expect.arrayContaining(['id', 'occurred_at', 'org_id', 'actor', 'action', 'code', 'target', 'outcome', 'source_address', 'details', 'correlation_id']),
    );
    const holder = new Client({ connectionString: a.databaseUrl });
    const tamper = new Client({ connectionString: a.databaseUrl });
    await holder.connect();
    await tamper.connect();
    try {
      // The chainers of both instances skip while this holds the pass, so the new events stay unchained.
      await holder.query('BEGIN');
      await holder.query("SELECT pg_advisory_xact_lock(hashtextextended('audit-chain', 0))");
      const { rows: fresh } = await a.db.query<{ id: string }>(
        `INSERT INTO audit_events (occurred_at, org_id, actor, action, code, target, outcome, source_address, details, correlation_id)
         SELECT now(), $1, 'system', 'system_account.update', 0, 't' || n, 'success', '192.0.2.1', jsonb_build_object('n', n), 'c' || n
           FROM generate_series(1, 2) AS n RETURNING id::text AS id`,
        [org],
      );
      const unchained = fresh[0].id;
      const fill = `chain_seq = 2, prev_digest = '${first.digest}', digest = '${'e'.repeat(64)}'`;
      const answers: { sql: string; id: string; error?: string }[] = [];
      for (const { column_name: column, data_type: type } of columns) {
        const set = `${column} = ${changed(column, type)}`;
        for (const [sql, id] of [
          [`UPDATE audit_events SET ${set} WHERE id = $1`, first.id],
          [`UPDATE audit_events SET ${set} WHERE id = $1`, unchained],
          [`UPDATE audit_events SET ${fill}, ${set} WHERE id = $1`, unchained],
        ]) {
          // Each attempt rolled back, so one that got through does not hide the next behind a filled chain.
          await tamper.query('BEGIN');
          const error = await tamper.query(sql, [id]).then(
            () => undefined,
            (refused: Error) => refused.message,
          );
          await tamper.query('ROLLBACK');
          answers.push({ sql, id, error });
        }
      }
      // Every one refused by the trigger (the list names any that was not).
      expect(answers.filter((answer) => answer.error !== 'audit_events is append-only')).toEqual([]);
      expect(answers).toHaveLength(3 * columns.length);
      // A column added later is covered as well, without a change to the trigger (rolled back: a test-only column).
      await tamper.query('BEGIN');
      await tamper.query('ALTER TABLE audit_events ADD COLUMN added_later text');
      await expect(tamper.query(`UPDATE audit_events SET ${fill}, added_later = 'x' WHERE id = $1`, [unchained])).rejects.toThrow(
        'audit_events is append-only',
      );
      await tamper.query('ROLLBACK');
      // One statement is checked as a whole: a single row changed beyond its chain columns refuses all of it.
      await expect(
        a.db.query(
          `UPDATE audit_events e SET chain_seq = u.seq, prev_digest = u.prev, digest = u.digest, actor = CASE WHEN e.id = $2 THEN 'someone-else' ELSE e.actor END
             FROM unnest($1::bigint[], ARRAY[2, 3]::bigint[], ARRAY[$3, $4]::text[], ARRAY[$4, $5]::text[]) AS u(id, seq, prev, digest) WHERE e.id = u.id`,
          [fresh.map((row) => row.id), fresh[1].id, first.digest, 'd'.repeat(64), 'e'.repeat(64)],
        ),
      ).rejects.toThrow('audit_events is append-only');
      const { rows: untouched } = await a.db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM audit_events WHERE id = ANY($1::bigint[]) AND digest IS NULL',
        [fresh.map((row) => row.id)],
      );
      expect(untouched[0].n).toBe(2);
    } finally {
      await holder.query('ROLLBACK');
      await holder.end();
      await tamper.end();
    }
    // The chainer's own update (the chain columns of many rows in one statement) passes, and the chain verifies.
    await settled(org);
    const rows = await chained(org);
    expect(rows.map((row) => Number(row.chain_seq))).toEqual([1, 2, 3]);
    expect(await a.app.get(AuditVerifier).verifyChain(org)).toMatchObject({ org, verified: true, events: 3, unchained: 0 });
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

  /** Waits until the head of `org` at position `seq` has been signed. */
  async function checkpointed(org: string, seq: number) {
    for (let i = 0; i < 200; i++) {
      const { rows } = await a.db.query('SELECT 1 FROM audit_checkpoints WHERE org_id = $1 AND chain_seq >= $2', [org, seq]);
      if (rows.length > 0) return;
      await sleep(25);
    }
    throw new Error(`no checkpoint of ${org} at ${seq} within 5 s`);
  }

  it('a checkpoint after AUDIT_CHECKPOINT_EVENTS events: the head signed in the HSM, verifiable with the key published at /audit/v1/checkpoint-key alone', async () => {
    const org = newOrg();
    const chain = await chainOf(org, 5);
    await checkpointed(org, 5);
    const { rows } = await a.db.query<{ chain_seq: string; digest: string; signed_at: Date; key_id: string; signature: string }>(
      'SELECT chain_seq::text AS chain_seq, digest, signed_at, key_id, signature FROM audit_checkpoints WHERE org_id = $1',
      [org],
    );
    expect(rows).toEqual([{ chain_seq: '5', digest: chain[4].digest, signed_at: expect.any(Date), key_id: expect.any(String), signature: expect.any(String) }]);
    const published = await b.http.get('/audit/v1/checkpoint-key').expect(200);
    expect(published.headers['cache-control']).toBe('public, max-age=300');
    expect(published.body).toEqual({
      keys: [{ kty: 'EC', crv: 'P-256', x: expect.any(String), y: expect.any(String), kid: rows[0].key_id, alg: 'ES256', use: 'sig' }],
    });
    // What a verifier outside the service does: the canonical JSON of the checkpoint, ES256 (raw r||s).
    const message = canonicalJson({ v: 1, type: 'audit-checkpoint', org, seq: 5, digest: chain[4].digest, signedAt: rows[0].signed_at.toISOString() });
    expect(message).toBe(
      `{"digest":"${chain[4].digest}","org":"${org}","seq":5,"signedAt":"${rows[0].signed_at.toISOString()}","type":"audit-checkpoint","v":1}`,
    );
    const key = createPublicKey({ key: published.body.keys[0], format: 'jwk' });
    expect(verify('sha256', Buffer.from(message), { key, dsaEncoding: 'ieee-p1363' }, Buffer.from(rows[0].signature, 'base64url'))).toBe(true);
    expect(
      verify('sha256', Buffer.from(message.replace('"seq":5', '"seq":4')), { key, dsaEncoding: 'ieee-p1363' }, Buffer.from(rows[0].signature, 'base64url')),
    ).toBe(false);
    expect(await a.app.get(AuditVerifier).verifyChain(org)).toMatchObject({
      verified: true,
      checkpoints: 1,
      lastCheckpoint: { seq: 5, digest: chain[4].digest },
    });
  });

  it('a checkpoint AUDIT_CHECKPOINT_INTERVAL_S after the last one, however few events came', async () => {
    const org = newOrg();
    const chain = await chainOf(org, 2);
    await sleep(200);
    expect((await a.db.query('SELECT 1 FROM audit_checkpoints WHERE org_id = $1', [org])).rows).toHaveLength(0);
    a.clock.advance(61);
    await checkpointed(org, 2);
    expect(await a.app.get(AuditVerifier).verifyChain(org)).toMatchObject({
      verified: true,
      checkpoints: 1,
      lastCheckpoint: { seq: 2, digest: chain[1].digest },
    });
  });

  it('a checkpoint whose signature was altered is refused', async () => {
    const org = newOrg();
    await chainOf(org, 5);
    await checkpointed(org, 5);
    const { rows } = await a.db.query<{ signature: string }>('SELECT signature FROM audit_checkpoints WHERE org_id = $1', [org]);
    const altered = Buffer.from(rows[0].signature, 'base64url');
    altered[10] ^= 0x01;
    await a.db.query('UPDATE audit_checkpoints SET signature = $2 WHERE org_id = $1', [org, altered.toString('base64url')]);
    expect(await a.app.get(AuditVerifier).verifyChain(org)).toMatchObject({
      verified: false,
      checkpoints: 0,
      problem: { kind: 'checkpoint', chainSeq: 5, detail: expect.stringContaining('its signature does not verify with the audit key') },
    });
  });

  it('a checkpoint moved to another digest is refused too (its signature covers the digest)', async () => {
    const org = newOrg();
    const chain = await chainOf(org, 5);
    await checkpointed(org, 5);
    await a.db.query('UPDATE audit_checkpoints SET digest = $2 WHERE org_id = $1', [org, chain[3].digest]);
    expect(await a.app.get(AuditVerifier).verifyChain(org)).toMatchObject({ verified: false, problem: { kind: 'checkpoint', chainSeq: 5 } });
  });

  it('the last events removed after a checkpoint (truncation) are found: the checkpoint covers positions the chain no longer has', async () => {
    const org = newOrg();
    const chain = await chainOf(org, 5);
    await checkpointed(org, 5);
    await behindTheServicesBack('DELETE FROM audit_events WHERE id = ANY($1::bigint[])', [[chain[3].id, chain[4].id]]);
    expect(await a.app.get(AuditVerifier).verifyChain(org)).toMatchObject({
      verified: false,
      events: 3,
      problem: { kind: 'removed', chainSeq: 4, detail: expect.stringContaining('chain positions 4-5 are missing') },
    });
  });

  it('a chain recomputed after a change (every digest made anew) links up, but not to the digest the checkpoint signed', async () => {
    const org = newOrg();
    const chain = await chainOf(org, 5);
    await checkpointed(org, 5);
    let prev = chain[0].prev_digest!;
    for (const [i, row] of chain.entries()) {
      const forged = i === 1 ? { ...row, outcome: 'failure' } : row;
      const digest = eventDigest(forged, prev);
      await behindTheServicesBack('UPDATE audit_events SET outcome = $2, prev_digest = $3, digest = $4 WHERE id = $1', [row.id, forged.outcome, prev, digest]);
      prev = digest;
    }
    expect(await a.app.get(AuditVerifier).verifyChain(org)).toMatchObject({ verified: false, events: 5, problem: { kind: 'rewritten', chainSeq: 5 } });
  });

  describe('GET /admin/v1/audit-verification', () => {
    let admin: string;
    beforeAll(async () => {
      admin = await platformAdminToken(a.http);
    });
    const verification = (query: string) => a.http.get(`/admin/v1/audit-verification${query}`).auth(admin, { type: 'bearer' });

    it("answers an organization's verification; names the changed event; the platform's own chain without org", async () => {
      const org = newOrg();
      const chain = await chainOf(org, 5);
      await checkpointed(org, 5);
      const good = await verification(`?org=${org}`).expect(200);
      expect(good.body).toEqual({
        org,
        verified: true,
        from: 1,
        events: 5,
        head: { seq: 5, digest: chain[4].digest },
        unchained: 0,
        checkpoints: 1,
        lastCheckpoint: { seq: 5, digest: chain[4].digest, signedAt: expect.any(String) },
      });
      await behindTheServicesBack(`UPDATE audit_events SET target = 'other' WHERE id = $1`, [chain[1].id]);
      const bad = await verification(`?org=${org}&from=1`).expect(200);
      expect(bad.body).toMatchObject({ verified: false, problem: { kind: 'changed', chainSeq: 2, eventId: chain[1].id } });
      expect((await verification(`?org=${org}&from=3`).expect(200)).body).toMatchObject({ verified: true, from: 3, events: 3 });
      await settled(null);
      expect((await verification('').expect(200)).body).toMatchObject({ org: null, verified: true });
    });

    it('bad input is a 400 naming it, an organization without events a 404, never a 500', async () => {
      const org = newOrg();
      await chainOf(org, 1);
      const cases: [string, string][] = [
        [`?org=${org}&from=0`, 'from must be a chain position'],
        [`?org=${org}&from=-1`, 'from must be a chain position'],
        [`?org=${org}&from=abc`, 'from must be a chain position'],
        [`?org=${org}&from=1.5`, 'from must be a chain position'],
        [`?org=${org}&from=99999999999999999999`, 'from must be a chain position'],
        ['?org=', 'org must be an organization id'],
        [`?org=${org}&org=${org}`, 'Query parameter org may be given once'],
        [`?org=${org}&form=1`, 'Unknown query parameter form'],
      ];
      for (const [query, detail] of cases) {
        const response = await verification(query);
        expect({ query, status: response.status, detail: response.body.detail }).toEqual({ query, status: 400, detail: expect.stringContaining(detail) });
      }
      const unknown = await verification('?org=no_such_org_anywhere');
      expect({ status: unknown.status, detail: unknown.body.detail }).toEqual({
        status: 404,
        detail: expect.stringContaining('No audit events of organization no_such_org_anywhere'),
      });
      // Not for an organization administrator, nor without a token.
      expect((await a.http.get(`/admin/v1/audit-verification?org=${org}`)).status).toBe(401);
    });
  });

  describe('npm run cli -- audit verify', () => {
    /** The command line with the test app's configuration (as test/cli.e2e-spec does). */
    function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
      const env = {
        PATH: process.env.PATH!,
        NODE_ENV: 'test',
        DATA_DIR: process.env.TEST_RUN_DIR!,
        DATABASE_URL: a.databaseUrl,
        PUBLIC_BASE_URL: 'https://api.example.test',
        AUTH_BASE_URL: 'https://auth.example.test',
        PKCS11_MODULE: process.env.TEST_PKCS11_MODULE!,
        PKCS11_TOKEN_LABEL: process.env.TEST_PKCS11_TOKEN_LABEL!,
        PKCS11_PIN: process.env.TEST_PKCS11_PIN!,
        SOFTHSM2_CONF: process.env.SOFTHSM2_CONF!,
        SECRET_PEPPER: a.config.secretPepper.toString('utf8'),
        DATA_ENCRYPTION_KEYS: a.config.dataEncryptionKeys.map((k) => `${k.id}:${k.key.toString('base64')}`).join(','),
        PLATFORM_ADMIN_SECRET,
      };
      return new Promise((done) => {
        execFile(process.execPath, [CLI, ...args], { env }, (error, stdout, stderr) => done({ code: error ? Number(error.code) : 0, stdout, stderr }));
      });
    }

    it('verifies one organization and every chain, names a changed event with exit code 1, refuses a bad --from', async () => {
      const org = newOrg();
      const chain = await chainOf(org, 5);
      await checkpointed(org, 5);
      const good = await cli(['audit', 'verify', org]);
      expect({ code: good.code, stderr: good.stderr }).toEqual({ code: 0, stderr: '' });
      expect(JSON.parse(good.stdout)).toEqual([
        expect.objectContaining({ org, verified: true, events: 5, checkpoints: 1, lastCheckpoint: expect.objectContaining({ seq: 5 }) }),
      ]);
      await behindTheServicesBack(`UPDATE audit_events SET action = 'user.delete' WHERE id = $1`, [chain[3].id]);
      const bad = await cli(['audit', 'verify', org]);
      expect(bad.code).toBe(1);
      expect(JSON.parse(bad.stdout)).toEqual([
        expect.objectContaining({ org, verified: false, problem: expect.objectContaining({ kind: 'changed', chainSeq: 4, eventId: chain[3].id }) }),
      ]);
      expect(bad.stderr).toContain(`Refused: ${org}: event ${chain[3].id} (chain position 4)`);
      const later = await cli(['audit', 'verify', org, '--from', '5']);
      expect({ code: later.code, verified: JSON.parse(later.stdout)[0].verified }).toEqual({ code: 0, verified: true });
      // Without an organization: every chain, the platform's own among them; this one's problem makes it exit 1.
      const all = await cli(['audit', 'verify']);
      expect(all.code).toBe(1);
      const results = JSON.parse(all.stdout) as { org: string | null; verified: boolean }[];
      expect(results).toEqual(expect.arrayContaining([expect.objectContaining({ org: null }), expect.objectContaining({ org, verified: false })]));
      const badFrom = await cli(['audit', 'verify', org, '--from', 'x']);
      expect({ code: badFrom.code, stdout: badFrom.stdout }).toEqual({ code: 1, stdout: '' });
      expect(badFrom.stderr).toContain('Refused: from must be a chain position');
    }, 60_000);
  });
});

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

/** Every node of an EXPLAIN (FORMAT JSON) plan. */
function planNodes(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(planNodes)];
}
