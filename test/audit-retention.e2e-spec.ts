import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from 'pg';
import { AuditEvent, AuditLog, AuditRetention, ChainPruned, AuditVerifier, CHAIN_COLUMNS, ChainRow, eventDigest } from '@app/audit';
import { Database } from '@app/persistence';
import { PLATFORM_ADMIN_SECRET, TestApp, createTestApp, platformAdminToken } from '@app/testing';

const ROOT = resolve(__dirname, '..');
const CLI = join(ROOT, 'dist/apps/cli/src/main.js');
const OFFLINE = join(ROOT, 'ops/audit-export-offline.js');
const FLOOR_DAYS = 30;

/**
 * Retention of the audit log (DECISIONS 11.3, issue 36 item 3): an organization's events older than
 * its `auditRetentionDays` leave only up to a signed checkpoint; what remains verifies from the prune
 * point, anchored on that checkpoint, and an UPDATE, a DELETE or an INSERT among the remaining events
 * is still named; an export of the pruned chain verifies offline; the setting below the platform's
 * floor is a 400; only the retention job's transaction may delete, and only up to the prune point.
 */
describe('audit retention (DECISIONS 11.3)', () => {
  let a: TestApp;
  let admin: string;
  let dir: string;
  const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));
  const newOrg = () => `keep_${randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    a = await createTestApp({
      env: {
        AUDIT_CHAIN_INTERVAL_MS: '20',
        AUDIT_CHECKPOINT_EVENTS: '5',
        AUDIT_CHECKPOINT_INTERVAL_S: '60',
        AUDIT_RETENTION_MIN_DAYS: String(FLOOR_DAYS),
        // The test runs the job itself (pruneOnce), with the test clock.
        AUDIT_RETENTION_INTERVAL_S: '86400',
      },
    });
    dir = mkdtempSync(join(tmpdir(), 'audit-retention-'));
  });
  afterAll(async () => {
    await a?.close();
  });

  /** A token of the platform administrator, fresh: the test clock moves by weeks. */
  const token = async () => (admin = await platformAdminToken(a.http));

  const event = (org: string, n: number): AuditEvent => ({
    org,
    actor: 'system',
    action: 'system_account.update',
    target: `t${n}`,
    outcome: 'success',
    details: { n },
  });

  async function write(org: string, count: number) {
    const db = a.app.get(Database);
    for (let i = 0; i < count; i++) await db.transaction((tx) => a.app.get(AuditLog).record(event(org, i), tx));
  }

  async function until(what: string, check: () => Promise<boolean>) {
    for (let i = 0; i < 400; i++) {
      if (await check()) return;
      await sleep(25);
    }
    throw new Error(`${what} within 10 s`);
  }

  const settled = (org: string | null) =>
    until(`events of ${org} chained`, async () => {
      const { rows } = await a.db.query<{ n: number }>('SELECT count(*)::int AS n FROM audit_events WHERE digest IS NULL AND org_id IS NOT DISTINCT FROM $1', [
        org,
      ]);
      return rows[0].n === 0;
    });
  const checkpointed = (org: string, seq: number) =>
    until(`checkpoint of ${org} at ${seq}`, async () => {
      const { rows } = await a.db.query('SELECT 1 FROM audit_checkpoints WHERE org_id = $1 AND chain_seq = $2', [org, seq]);
      return rows.length > 0;
    });

  async function chained(org: string): Promise<ChainRow[]> {
    const { rows } = await a.db.query<ChainRow>(`SELECT ${CHAIN_COLUMNS} FROM audit_events WHERE org_id = $1 ORDER BY audit_events.chain_seq`, [org]);
    return rows;
  }

  /** Runs `work` while no chainer can take a pass (no new checkpoint is signed meanwhile). */
  async function withChainerHeld<T>(work: () => Promise<T>): Promise<T> {
    const holder = new Client({ connectionString: a.databaseUrl });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query("SELECT pg_advisory_xact_lock(hashtextextended('audit-chain', 0))");
      return await work();
    } finally {
      await holder.query('ROLLBACK');
      await holder.end();
    }
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

  /**
   * An organization with a retention of FLOOR_DAYS and 13 events (its creation and 12 more), signed at
   * positions 5 and 10; then 31 days pass and the job runs while no new checkpoint can be signed:
   * positions 1-10 leave, 11-13 (old too, but after the last checkpoint) stay; a second pass meanwhile removes nothing.
   */
  async function prunedOrganization(): Promise<{ org: string; before: ChainRow[]; pruned: ChainPruned[] | undefined; again: ChainPruned[] | undefined }> {
    const org = newOrg();
    await token();
    await a.http
      .post('/admin/v1/organizations')
      .auth(admin, { type: 'bearer' })
      .send({ id: org, name: 'Kept', settings: { auditRetentionDays: FLOOR_DAYS } })
      .expect(201);
    await write(org, 4);
    await checkpointed(org, 5);
    await write(org, 5);
    await checkpointed(org, 10);
    await write(org, 3);
    await settled(org);
    const before = await chained(org);
    expect(before.map((row) => Number(row.chain_seq))).toEqual(Array.from({ length: 13 }, (_, i) => i + 1));
    const [pruned, again] = await withChainerHeld(async () => {
      a.clock.advance((FLOOR_DAYS + 1) * 86400);
      return [await a.app.get(AuditRetention).pruneOnce(), await a.app.get(AuditRetention).pruneOnce()];
    });
    return { org, before, pruned, again };
  }

  it('removes the events older than the retention up to the last signed checkpoint; the old ones after it stay; recorded as audit.pruned; verification starts at the prune point', async () => {
    const { org, before, pruned, again } = await prunedOrganization();
    expect(pruned).toEqual(expect.arrayContaining([{ org, events: 10, throughSeq: 10, retentionDays: FLOOR_DAYS }]));
    const after = await chained(org);
    expect(after.map((row) => row.id)).toEqual(before.slice(10).map((row) => row.id));
    const { rows: point } = await a.db.query('SELECT pruned_seq::int AS seq, pruned_events::int AS events FROM audit_prune_points WHERE org_id = $1', [org]);
    expect(point).toEqual([{ seq: 10, events: 10 }]);
    const { rows: recorded } = await a.db.query<{ org_id: string | null; actor: string; code: number; target: string; details: Record<string, unknown> }>(
      "SELECT org_id, actor, code, target, details FROM audit_events WHERE action = 'audit.pruned' AND details->>'org' = $1",
      [org],
    );
    expect(recorded).toEqual([
      {
        org_id: null,
        actor: 'system',
        code: 76001,
        target: org,
        details: { org, events: 10, throughSeq: 10, checkpointSignedAt: expect.any(String), retentionDays: FLOOR_DAYS, cutoff: expect.any(String) },
      },
    ]);
    const verification = await a.app.get(AuditVerifier).verifyChain(org);
    expect(verification).toEqual({
      org,
      verified: true,
      from: 11,
      pruned: { through: 10, events: 10, at: expect.any(String), checkpoint: { seq: 10, digest: before[9].digest, signedAt: expect.any(String) } },
      events: 3,
      head: { seq: 13, digest: before[12].digest },
      unchained: 0,
      checkpoints: 0,
      lastCheckpoint: null,
    });
    // A second pass (before any new checkpoint) finds nothing more behind a checkpoint.
    expect(again?.find((chain) => chain.org === org)).toBeUndefined();
    // Once the remaining old events are signed (the interval has passed), the next pass takes them too; the young ones stay.
    await checkpointed(org, 13);
    await token();
    await write(org, 2);
    await settled(org);
    expect((await a.app.get(AuditRetention).pruneOnce())?.find((chain) => chain.org === org)).toEqual({
      org,
      events: 3,
      throughSeq: 13,
      retentionDays: FLOOR_DAYS,
    });
    expect((await chained(org)).map((row) => Number(row.chain_seq))).toEqual([14, 15]);
    expect(await a.app.get(AuditVerifier).verifyChain(org)).toMatchObject({ verified: true, from: 14, pruned: { through: 13, events: 13 }, events: 2 });
    // The admin API says the same.
    const answer = await a.http.get(`/admin/v1/audit-verification?org=${org}`).auth(admin, { type: 'bearer' }).expect(200);
    expect(answer.body).toMatchObject({ verified: true, from: 14, pruned: { through: 13, events: 13, checkpoint: { seq: 13 } } });
  });

  it('after pruning, an UPDATE of a remaining event is found and named', async () => {
    const { org, before } = await prunedOrganization();
    await behindTheServicesBack(`UPDATE audit_events SET details = '{"n": 99}' WHERE id = $1`, [before[11].id]);
    expect(await a.app.get(AuditVerifier).verifyChain(org)).toMatchObject({
      verified: false,
      from: 11,
      problem: { kind: 'changed', chainSeq: 12, eventId: before[11].id },
    });
  });

  it('after pruning, a DELETE of a remaining event (the first after the prune point, or a later one) is found and named', async () => {
    const first = await prunedOrganization();
    await behindTheServicesBack('DELETE FROM audit_events WHERE id = $1', [first.before[10].id]);
    expect(await a.app.get(AuditVerifier).verifyChain(first.org)).toMatchObject({
      verified: false,
      problem: { kind: 'removed', chainSeq: 11, before: first.before[11].id, detail: expect.stringContaining('chain position 11 is missing') },
    });
    const later = await prunedOrganization();
    await behindTheServicesBack('DELETE FROM audit_events WHERE id = $1', [later.before[11].id]);
    expect(await a.app.get(AuditVerifier).verifyChain(later.org)).toMatchObject({
      verified: false,
      problem: { kind: 'removed', chainSeq: 12, after: later.before[10].id, before: later.before[12].id },
    });
  });

  it('after pruning, an INSERT among the remaining events (linked, with a valid digest of its own) is found and named', async () => {
    const { org, before } = await prunedOrganization();
    // Room at position 11, the first after the prune point, and a forged event there that links to the checkpoint's digest.
    await behindTheServicesBack('UPDATE audit_events SET chain_seq = chain_seq + 1000 WHERE org_id = $1 AND chain_seq >= 11', [org]);
    await behindTheServicesBack('UPDATE audit_events SET chain_seq = chain_seq - 999 WHERE org_id = $1 AND chain_seq > 1000', [org]);
    const { rows } = await a.db.query<{ id: string }>("SELECT nextval('audit_events_id_seq')::text AS id");
    const forged: ChainRow = { ...before[10], id: rows[0].id, actor: 'forger', details: {}, chain_seq: '11', prev_digest: before[9].digest, digest: null };
    forged.digest = eventDigest(forged, before[9].digest!);
    await a.db.query(
      `INSERT INTO audit_events (id, occurred_at, org_id, actor, action, code, target, outcome, details, chain_seq, prev_digest, digest)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 11, $10, $11)`,
      [
        forged.id,
        forged.occurred,
        org,
        forged.actor,
        forged.action,
        forged.code,
        forged.target,
        forged.outcome,
        forged.details,
        forged.prev_digest,
        forged.digest,
      ],
    );
    expect(await a.app.get(AuditVerifier).verifyChain(org)).toMatchObject({
      verified: false,
      problem: { kind: 'inserted', chainSeq: 11, eventId: forged.id },
    });
  });

  it('a prune point whose checkpoint was altered or removed anchors nothing: refused', async () => {
    const { org } = await prunedOrganization();
    await a.db.query("UPDATE audit_checkpoints SET signed_at = signed_at + interval '1 second' WHERE org_id = $1 AND chain_seq = 10", [org]);
    expect(await a.app.get(AuditVerifier).verifyChain(org)).toMatchObject({
      verified: false,
      problem: { kind: 'checkpoint', chainSeq: 10, detail: expect.stringContaining('anchors the chain after its pruning by retention') },
    });
    await a.db.query('DELETE FROM audit_checkpoints WHERE org_id = $1 AND chain_seq = 10', [org]);
    expect(await a.app.get(AuditVerifier).verifyChain(org)).toMatchObject({
      verified: false,
      problem: { kind: 'checkpoint', chainSeq: 10, detail: expect.stringContaining('the checkpoint signed there is missing') },
    });
  });

  it('only the retention job deletes: the service role is refused without its transaction setting, and with it beyond the prune point', async () => {
    const { org, before } = await prunedOrganization();
    await expect(a.db.query('DELETE FROM audit_events WHERE id = $1', [before[10].id])).rejects.toThrow('audit_events is append-only');
    const db = new Client({ connectionString: a.databaseUrl });
    await db.connect();
    try {
      await db.query('BEGIN');
      await db.query("SELECT set_config('audit.retention_prune', 'on', true)");
      await expect(db.query('DELETE FROM audit_events WHERE id = $1', [before[10].id])).rejects.toThrow('audit_events is append-only');
      await db.query('ROLLBACK');
    } finally {
      await db.end();
    }
    expect(await chained(org)).toHaveLength(3);
  });

  it('one pass at a time across instances: while another holds it, pruneOnce skips', async () => {
    const holder = new Client({ connectionString: a.databaseUrl });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query("SELECT pg_advisory_xact_lock(hashtextextended('audit-retention', 0))");
      expect(await a.app.get(AuditRetention).pruneOnce()).toBeUndefined();
    } finally {
      await holder.query('ROLLBACK');
      await holder.end();
    }
  });

  it('an export of a pruned chain verifies offline: audit verify-export, and ops/audit-export-offline.js with openssl', async () => {
    const { org, before } = await prunedOrganization();
    await checkpointed(org, 13);
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
    const cli = (args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((done) =>
        execFile(process.execPath, [CLI, ...args], { env }, (error, stdout, stderr) => done({ code: error ? Number(error.code) : 0, stdout, stderr })),
      );
    const file = join(dir, `${org}.jsonl`);
    const exported = await cli(['audit', 'export', org, '--out', file]);
    expect({ code: exported.code, stderr: exported.stderr }).toEqual({ code: 0, stderr: '' });
    const lines = readFileSync(file, 'utf8')
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines[0]).toMatchObject({ format: 'audit-export/1', org, from: 11, pruned: { through: 10, events: 10, at: expect.any(String) } });
    expect(lines.filter((line) => line.type === 'event').map((line) => line.chain_seq)).toEqual([11, 12, 13]);
    expect(lines.filter((line) => line.type === 'checkpoint').map((line) => line.seq)).toEqual([10, 13]);
    const verified = await cli(['audit', 'verify-export', file]);
    expect({ code: verified.code, stderr: verified.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(verified.stdout)).toMatchObject({
      verified: true,
      from: 11,
      pruned: { through: 10, events: 10, checkpoint: { seq: 10, digest: before[9].digest } },
      events: 3,
      checkpoints: 1,
    });
    const out = join(dir, `${org}.offline`);
    const printed = execFileSync(process.execPath, [OFFLINE, file, out], { encoding: 'utf8' });
    expect(printed).toContain('3 events (the 10 events up to chain position 10 were removed by retention behind its checkpoint) and 2 checkpoints agree');
    for (const seq of [10, 13]) {
      const openssl = execFileSync(
        'openssl',
        ['dgst', '-sha256', '-verify', join(out, 'pub.pem'), '-signature', join(out, `checkpoint-${seq}.sig.der`), join(out, `checkpoint-${seq}.msg`)],
        { encoding: 'utf8' },
      );
      expect(openssl.trim()).toBe('Verified OK');
    }
    // An event of the export changed: both refuse it.
    const edited = join(dir, `${org}-edited.jsonl`);
    const text = readFileSync(file, 'utf8').replace('"n":1}', '"n":7}');
    expect(text).not.toBe(readFileSync(file, 'utf8'));
    writeFileSync(edited, text);
    const refused = await cli(['audit', 'verify-export', edited]);
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.stdout)).toMatchObject({ verified: false, problem: { kind: 'changed' } });
    expect(() => execFileSync(process.execPath, [OFFLINE, edited, `${out}-edited`], { stdio: 'pipe' })).toThrow();
  }, 60_000);

  describe('settings.auditRetentionDays', () => {
    it('below the platform floor is a 400 naming the setting and the floor, on create, PATCH and PUT; null keeps for ever', async () => {
      await token();
      const org = newOrg();
      const refusals = [
        await a.http
          .post('/admin/v1/organizations')
          .auth(admin, { type: 'bearer' })
          .send({ id: org, name: 'Short', settings: { auditRetentionDays: FLOOR_DAYS - 1 } }),
      ];
      expect((await a.db.query('SELECT 1 FROM organizations WHERE id = $1', [org])).rows).toHaveLength(0);
      await a.http.post('/admin/v1/organizations').auth(admin, { type: 'bearer' }).send({ id: org, name: 'Short' }).expect(201);
      refusals.push(
        await a.http
          .patch(`/admin/v1/organizations/${org}`)
          .auth(admin, { type: 'bearer' })
          .send({ settings: { auditRetentionDays: 1 } }),
        await a.http
          .put(`/admin/v1/organizations/${org}/settings`)
          .auth(admin, { type: 'bearer' })
          .send({ automaticDeviceCreation: false, applicationIdPolicy: 'any', auditRetentionDays: FLOOR_DAYS - 1 }),
      );
      for (const refusal of refusals) {
        expect({ status: refusal.status, detail: refusal.body.detail }).toEqual({
          status: 400,
          detail: expect.stringContaining(`settings.auditRetentionDays must be at least ${FLOOR_DAYS} (the platform's AUDIT_RETENTION_MIN_DAYS)`),
        });
      }
      for (const bad of ['365', 1.5, 0, -3, 36501, true]) {
        const response = await a.http
          .patch(`/admin/v1/organizations/${org}`)
          .auth(admin, { type: 'bearer' })
          .send({ settings: { auditRetentionDays: bad } });
        expect({ bad, status: response.status, detail: response.body.detail }).toEqual({
          bad,
          status: 400,
          detail: expect.stringContaining('auditRetentionDays'),
        });
      }
      const set = await a.http
        .patch(`/admin/v1/organizations/${org}`)
        .auth(admin, { type: 'bearer' })
        .send({ settings: { auditRetentionDays: FLOOR_DAYS } })
        .expect(200);
      expect(set.body.settings.auditRetentionDays).toBe(FLOOR_DAYS);
      const cleared = await a.http
        .patch(`/admin/v1/organizations/${org}`)
        .auth(admin, { type: 'bearer' })
        .send({ settings: { auditRetentionDays: null } })
        .expect(200);
      expect(cleared.body.settings.auditRetentionDays).toBeNull();
    });
  });
});
