import { execFile, execFileSync } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { AuditEvent, AuditLog, CHAIN_COLUMNS, ChainRow, eventContent, eventDigest, rowOfContent } from '@app/audit';
import { Database } from '@app/persistence';
import { PLATFORM_ADMIN_SECRET, TestApp, createTestApp } from '@app/testing';

const ROOT = resolve(__dirname, '..');
const CLI = join(ROOT, 'dist/apps/cli/src/main.js');
const OFFLINE = join(ROOT, 'ops/audit-export-offline.js');

/**
 * `audit export` and its offline verification (DECISIONS 11.2, issue 36): an export verifies with
 * `audit verify-export` (no database) and with ops/audit-export-offline.js + openssl; an edited, a
 * removed and an inserted line are each refused naming the event; a wrong key is refused.
 */
describe('audit export and offline verification (DECISIONS 11.2)', () => {
  let a: TestApp;
  let dir: string;
  let org: string;
  let exported: string[];
  const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

  function cli(args: string[], withDatabase = true): Promise<{ code: number; stdout: string; stderr: string }> {
    const env: Record<string, string> = { PATH: process.env.PATH!, NODE_ENV: 'test', DATA_DIR: process.env.TEST_RUN_DIR! };
    if (withDatabase)
      Object.assign(env, {
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
      });
    return new Promise((done) => {
      execFile(process.execPath, [CLI, ...args], { env }, (error, stdout, stderr) => done({ code: error ? Number(error.code) : 0, stdout, stderr }));
    });
  }

  const event = (n: number): AuditEvent => ({
    org,
    actor: 'system',
    action: 'system_account.update',
    target: `t${n}`,
    outcome: 'success',
    details: { n, nested: { z: 1, a: [1, 'two', null] }, text: 'ünïcode ✓ "quoted" \\ back' },
  });

  /** Writes `lines` to a new file of the test's directory. */
  function file(name: string, lines: string[]): string {
    const path = join(dir, name);
    writeFileSync(path, lines.map((line) => `${line}\n`).join(''));
    return path;
  }

  const eventLine = (seq: number) => exported.findIndex((line) => JSON.parse(line).type === 'event' && JSON.parse(line).chain_seq === seq);

  beforeAll(async () => {
    a = await createTestApp({ env: { AUDIT_CHAIN_INTERVAL_MS: '20', AUDIT_CHECKPOINT_EVENTS: '5', AUDIT_CHECKPOINT_INTERVAL_S: '60' } });
    dir = mkdtempSync(join(tmpdir(), 'audit-export-'));
    org = `export_${randomBytes(3).toString('hex')}`;
    const db = a.app.get(Database);
    // Two checkpoints: at 5 and at 10.
    for (const upTo of [5, 10]) {
      for (let i = upTo - 5; i < upTo; i++) await db.transaction((tx) => a.app.get(AuditLog).record(event(i), tx));
      for (let i = 0; i < 200; i++) {
        const { rows } = await a.db.query('SELECT 1 FROM audit_checkpoints WHERE org_id = $1 AND chain_seq = $2', [org, upTo]);
        if (rows.length > 0) break;
        await sleep(25);
      }
    }
    const out = join(dir, 'export.jsonl');
    const result = await cli(['audit', 'export', org, '--out', out]);
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' });
    exported = readFileSync(out, 'utf8').trimEnd().split('\n');
  }, 60_000);
  afterAll(async () => {
    await a?.close();
  });

  it('writes a header with the published key, every event with its digests and content, every checkpoint with its message and signature', async () => {
    const published = await a.http.get('/audit/v1/checkpoint-key').expect(200);
    const [header, ...rest] = exported.map((line) => JSON.parse(line));
    expect(header).toEqual({ format: 'audit-export/1', org, from: 1, key: published.body.keys[0] });
    const events = rest.filter((line) => line.type === 'event');
    const checkpoints = rest.filter((line) => line.type === 'checkpoint');
    expect(events.map((line) => line.chain_seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    const { rows } = await a.db.query<ChainRow>(`SELECT ${CHAIN_COLUMNS} FROM audit_events WHERE org_id = $1 ORDER BY audit_events.chain_seq`, [org]);
    expect(events[2]).toEqual({
      type: 'event',
      chain_seq: 3,
      prev_digest: rows[2].prev_digest,
      digest: rows[2].digest,
      content: eventContent(rows[2], rows[2].prev_digest!),
    });
    expect(eventDigest(rows[2], rows[2].prev_digest!)).toBe(rows[2].digest);
    expect(checkpoints.map((line) => line.seq)).toEqual([5, 10]);
    expect(checkpoints[1]).toEqual({
      type: 'checkpoint',
      org,
      seq: 10,
      digest: rows[9].digest,
      signedAt: expect.any(String),
      keyId: published.body.keys[0].kid,
      message: `{"digest":"${rows[9].digest}","org":"${org}","seq":10,"signedAt":"${checkpoints[1].signedAt}","type":"audit-checkpoint","v":1}`,
      signature: expect.stringMatching(/^[A-Za-z0-9_-]{86}$/),
    });
    // To standard output without --out; --from leaves out what is before.
    const later = await cli(['audit', 'export', org, '--from', '6']);
    expect(later.code).toBe(0);
    const laterLines = later.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(laterLines.filter((line) => line.type === 'event').map((line) => line.chain_seq)).toEqual([6, 7, 8, 9, 10]);
    expect(laterLines.filter((line) => line.type === 'checkpoint').map((line) => line.seq)).toEqual([10]);
    const verifiedLater = await cli(['audit', 'verify-export', file('later.jsonl', later.stdout.trimEnd().split('\n'))], false);
    expect({ code: verifiedLater.code, result: JSON.parse(verifiedLater.stdout) }).toEqual({
      code: 0,
      result: expect.objectContaining({ verified: true, from: 6, events: 5, checkpoints: 1 }),
    });
  }, 60_000);

  it('verifies offline with the command line (no database), with the key of the export or the published one', async () => {
    const result = await cli(['audit', 'verify-export', join(dir, 'export.jsonl')], false);
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' });
    const kid = JSON.parse(exported[0]).key.kid;
    expect(JSON.parse(result.stdout)).toEqual({
      org,
      verified: true,
      from: 1,
      events: 10,
      head: { seq: 10, digest: JSON.parse(exported[eventLine(10)]).digest },
      unchained: 0,
      checkpoints: 2,
      lastCheckpoint: { seq: 10, digest: JSON.parse(exported[eventLine(10)]).digest, signedAt: expect.any(String) },
      key: { kid, source: 'export' },
    });
    const jwks = join(dir, 'checkpoint-key.json');
    writeFileSync(jwks, JSON.stringify((await a.http.get('/audit/v1/checkpoint-key').expect(200)).body));
    const given = await cli(['audit', 'verify-export', join(dir, 'export.jsonl'), '--key', jwks], false);
    expect({ code: given.code, verified: JSON.parse(given.stdout).verified, key: JSON.parse(given.stdout).key }).toEqual({
      code: 0,
      verified: true,
      key: { kid, source: 'given' },
    });
  }, 60_000);

  it('verifies offline with ops/audit-export-offline.js and openssl, and openssl refuses another key', () => {
    const out = join(dir, 'offline');
    const printed = execFileSync(process.execPath, [OFFLINE, join(dir, 'export.jsonl'), out], { encoding: 'utf8' });
    expect(printed).toContain('10 events and 2 checkpoints agree');
    expect(readdirSync(out).sort()).toEqual(['checkpoint-10.msg', 'checkpoint-10.sig.der', 'checkpoint-5.msg', 'checkpoint-5.sig.der', 'pub.pem']);
    for (const seq of [5, 10]) {
      const verified = execFileSync(
        'openssl',
        ['dgst', '-sha256', '-verify', join(out, 'pub.pem'), '-signature', join(out, `checkpoint-${seq}.sig.der`), join(out, `checkpoint-${seq}.msg`)],
        { encoding: 'utf8' },
      );
      expect(verified.trim()).toBe('Verified OK');
    }
    // The command lines the script prints are the ones above.
    expect(printed).toContain(
      `openssl dgst -sha256 -verify ${join(out, 'pub.pem')} -signature ${join(out, 'checkpoint-5.sig.der')} ${join(out, 'checkpoint-5.msg')}`,
    );
    const other = join(dir, 'other.pem');
    writeFileSync(other, generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'pem', type: 'spki' }));
    let refusal = '';
    try {
      execFileSync('openssl', ['dgst', '-sha256', '-verify', other, '-signature', join(out, 'checkpoint-5.sig.der'), join(out, 'checkpoint-5.msg')], {
        stdio: 'pipe',
      });
    } catch (error) {
      refusal = `${(error as { status: number }).status} ${String((error as { stdout: Buffer }).stdout)}`;
    }
    expect(refusal).toMatch(/^1 Verification failure/);
  });

  /** The command line and the offline script on a tampered export: both refuse it, naming `named`. */
  async function refused(name: string, lines: string[], named: string) {
    const path = file(name, lines);
    const result = await cli(['audit', 'verify-export', path], false);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(named);
    let offline: { status: number; stderr: string } = { status: 0, stderr: '' };
    try {
      execFileSync(process.execPath, [OFFLINE, path, join(dir, `${name}.offline`)], { stdio: 'pipe' });
    } catch (error) {
      offline = { status: (error as { status: number }).status, stderr: String((error as { stderr: Buffer }).stderr) };
    }
    expect(offline.status).toBe(1);
    return { result: JSON.parse(result.stdout), offline: offline.stderr };
  }

  it('an edited line is refused naming the event', async () => {
    const lines = [...exported];
    const at = eventLine(3);
    const line = JSON.parse(lines[at]);
    line.content.outcome = 'failure';
    lines[at] = JSON.stringify(line);
    const { result, offline } = await refused('edited.jsonl', lines, `event ${line.content.id} (chain position 3)`);
    expect(result).toMatchObject({ verified: false, events: 2, line: at + 1, problem: { kind: 'changed', chainSeq: 3, eventId: line.content.id } });
    expect(offline).toContain(`event ${line.content.id} (chain position 3) does not match its digest`);
  });

  it('an edited line whose digest is recomputed too is refused at the link after it', async () => {
    const lines = [...exported];
    const at = eventLine(7);
    const line = JSON.parse(lines[at]);
    line.content.actor = 'someone-else';
    line.digest = eventDigest(rowOfContent(line.content, '7', ''), line.prev_digest);
    lines[at] = JSON.stringify(line);
    const { result } = await refused('recomputed.jsonl', lines, `event ${line.content.id} (chain position 7)`);
    expect(result).toMatchObject({ verified: false, problem: { kind: 'changed', chainSeq: 7, eventId: line.content.id } });
  });

  it('a removed line is refused naming its place between its neighbours', async () => {
    const lines = [...exported];
    const at = eventLine(4);
    const [before, after] = [JSON.parse(lines[at - 1]).content.id, JSON.parse(lines[at + 1]).content.id];
    lines.splice(at, 1);
    const { result, offline } = await refused('removed.jsonl', lines, `removed between event ${before} and event ${after}`);
    expect(result).toMatchObject({ verified: false, events: 3, problem: { kind: 'removed', chainSeq: 4, after: before, before: after } });
    expect(offline).toContain(`event ${after} is at chain position 5, expected 4`);
    // The last events removed, the checkpoint that covers them kept: the truncation is named at the checkpoint's line.
    const truncated = exported.filter((_, i) => i !== eventLine(9) && i !== eventLine(10));
    const checkpointLine = truncated.findIndex((line) => JSON.parse(line).type === 'checkpoint' && JSON.parse(line).seq === 10) + 1;
    const cut = await refused('truncated.jsonl', truncated, 'chain positions 9-10 are missing');
    expect(cut.result).toMatchObject({ verified: false, events: 8, checkpoints: 1, line: checkpointLine, problem: { kind: 'removed', chainSeq: 9 } });
    expect(cut.offline).toContain("the chain's digest at position 10 is not the one the checkpoint signed");
  });

  it('an inserted line, linked and with a valid digest of its own, is refused naming it', async () => {
    const lines = [...exported];
    const at = eventLine(4);
    const third = JSON.parse(lines[at - 1]);
    const content = { ...third.content, id: '999999999', actor: 'forger', prev: third.digest };
    const digest = eventDigest(rowOfContent(content, '4', ''), third.digest);
    const forged = { type: 'event', chain_seq: 4, prev_digest: third.digest, digest, content };
    // The events after it move one position on (chain_seq is not covered by the digest).
    const shifted = lines.map((text, i) => {
      const line = JSON.parse(text);
      return i >= at && line.type === 'event' ? JSON.stringify({ ...line, chain_seq: line.chain_seq + 1 }) : text;
    });
    shifted.splice(at, 0, JSON.stringify(forged));
    const { result, offline } = await refused('inserted.jsonl', shifted, 'event 999999999 (chain position 4) was inserted');
    expect(result).toMatchObject({ verified: false, problem: { kind: 'inserted', chainSeq: 4, eventId: '999999999' } });
    expect(offline).toContain('does not link to the event before it');
  });

  it('a wrong key is refused, and so is an altered checkpoint signature; bad input is a clear refusal', async () => {
    const other = join(dir, 'wrong.pem');
    writeFileSync(other, generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'pem', type: 'spki' }));
    const wrong = await cli(['audit', 'verify-export', join(dir, 'export.jsonl'), '--key', other], false);
    expect(wrong.code).toBe(1);
    expect(JSON.parse(wrong.stdout)).toMatchObject({ verified: false, checkpoints: 0, problem: { kind: 'checkpoint', chainSeq: 5 } });
    expect(wrong.stderr).toContain('the checkpoint of chain position 5');
    expect(wrong.stderr).toContain('not the audit key');
    // The wrong key put in the export's header, with the checkpoints naming it: the signature itself is refused.
    const lines = [...exported];
    const at = exported.findIndex((line) => JSON.parse(line).type === 'checkpoint' && JSON.parse(line).seq === 10);
    const checkpoint = JSON.parse(lines[at]);
    const signature = Buffer.from(checkpoint.signature, 'base64url');
    signature[10] ^= 1;
    lines[at] = JSON.stringify({ ...checkpoint, signature: signature.toString('base64url') });
    const altered = await cli(['audit', 'verify-export', file('altered.jsonl', lines)], false);
    expect(altered.code).toBe(1);
    expect(JSON.parse(altered.stdout)).toMatchObject({ verified: false, checkpoints: 1, line: at + 1, problem: { kind: 'checkpoint', chainSeq: 10 } });
    expect(altered.stderr).toContain('its signature does not verify with the audit key');

    const cases: [string[], string][] = [
      [['audit', 'verify-export', join(dir, 'no-such-file')], `Cannot read ${join(dir, 'no-such-file')}: ENOENT`],
      [['audit', 'verify-export', file('garbage.jsonl', ['not json'])], 'line 1 is not a JSON object'],
      [['audit', 'verify-export', file('other.jsonl', ['{"format":"other"}'])], 'line 1 is not the header of an audit-export/1 export'],
      [['audit', 'verify-export', join(dir, 'export.jsonl'), '--key', file('bad-key', ['hello'])], 'the key is neither a PEM public key nor a JWK'],
    ];
    for (const [args, message] of cases) {
      const result = await cli(args, false);
      expect({ args, code: result.code, stdout: result.stdout, stderr: result.stderr }).toEqual({
        args,
        code: 1,
        stdout: '',
        stderr: expect.stringContaining(message),
      });
    }
    const dbCases: [string[], string][] = [
      [['audit', 'export', org, '--from', 'x'], 'from must be a chain position'],
      [['audit', 'export', org, '--out', join(dir, 'export.jsonl')], 'an existing file is never overwritten'],
      [['audit', 'export', 'no_such_org_anywhere'], 'No audit events of organization no_such_org_anywhere'],
    ];
    for (const [args, message] of dbCases) {
      const result = await cli(args);
      expect({ args, code: result.code, stdout: result.stdout, stderr: result.stderr }).toEqual({
        args,
        code: 1,
        stdout: '',
        stderr: expect.stringContaining(message),
      });
    }
  }, 60_000);
});
