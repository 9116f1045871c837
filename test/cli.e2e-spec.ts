import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Command } from 'commander';
import {
  PLATFORM_ADMIN_SECRET,
  TestApp,
  createOrganization,
  createTestApp,
  makeCertificate,
  opensslCsr,
  platformAdminToken,
  tokenBySecret,
  tokenRequest,
} from '@app/testing';
import { CertificateAuthority } from '@app/pki';
import { buildProgram } from '../apps/cli/src/main';

/**
 * The operator command line (DECISIONS 11, issue 4): the built binary run against the suite's
 * database, with the service's configuration. Every change it makes is visible through the HTTP
 * API at once, is audited with actor `cli`, and its exit codes are the ones scripts rely on:
 * 0 done, 1 refused, 2 usage, 3 configuration or infrastructure.
 */

const ROOT = resolve(__dirname, '..');
const CLI = join(ROOT, 'dist/apps/cli/src/main.js');
const PASSWORD = 'cli-cardholder-passphrase-1';
const SECOND_PASSWORD = 'cli-second-passphrase-22';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  /** stdout as JSON; its fields are asserted one by one. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: () => any;
}

describe('command line (apps/cli)', () => {
  let t: TestApp;
  let admin: string;
  let env: Record<string, string>;
  let workDir: string;
  const org = `cli_${randomBytes(3).toString('hex')}`;
  /** Everything the command line printed on stderr, for the "no secret" check. */
  let stderrSeen = '';
  /** Every secret value the command line handled. */
  const secrets: string[] = [PASSWORD, SECOND_PASSWORD, PLATFORM_ADMIN_SECRET];

  beforeAll(async () => {
    t = await createTestApp();
    admin = await platformAdminToken(t.http);
    workDir = join(process.env.TEST_RUN_DIR!, `cli-${randomBytes(4).toString('hex')}`);
    mkdirSync(workDir, { recursive: true });
    // The configuration the test app runs with (test/support testConfig), as environment variables.
    env = {
      PATH: process.env.PATH!,
      NODE_ENV: 'test',
      LOG_LEVEL: 'info',
      DATA_DIR: process.env.TEST_RUN_DIR!,
      DATABASE_URL: t.databaseUrl,
      PUBLIC_BASE_URL: 'https://api.example.test',
      AUTH_BASE_URL: 'https://auth.example.test',
      PKCS11_MODULE: process.env.TEST_PKCS11_MODULE!,
      PKCS11_TOKEN_LABEL: process.env.TEST_PKCS11_TOKEN_LABEL!,
      PKCS11_PIN: process.env.TEST_PKCS11_PIN!,
      SOFTHSM2_CONF: process.env.SOFTHSM2_CONF!,
      SECRET_PEPPER: t.config.secretPepper.toString('utf8'),
      DATA_ENCRYPTION_KEYS: t.config.dataEncryptionKeys.map((k) => `${k.id}:${k.key.toString('base64')}`).join(','),
      PLATFORM_ADMIN_SECRET,
    };
  }, 60_000);
  afterAll(() => t?.close());

  function cli(args: string[], options: { input?: string; env?: Record<string, string> } = {}): Promise<Run> {
    return new Promise((done, fail) => {
      const child = spawn(process.execPath, [CLI, ...args], { cwd: ROOT, env: { ...env, ...options.env }, stdio: ['pipe', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      child.once('error', fail);
      child.once('close', (code) => {
        stderrSeen += stderr;
        done({ code, stdout, stderr, json: () => JSON.parse(stdout) });
      });
      child.stdin.end(options.input ?? '');
    });
  }

  function expectOk(run: Run): void {
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
  }

  function expectRefused(run: Run, detail: string | RegExp): void {
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(typeof detail === 'string' ? new RegExp(`^Refused: .*${detail.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`) : detail);
  }

  const api = (method: 'get' | 'post' | 'delete', path: string, token = admin) => t.http[method](`/admin/v1${path}`).auth(token, { type: 'bearer' });
  const whoami = (token: string) => t.http.get(`/authentication/customer/${org}/whoami`).auth(token, { type: 'bearer' });

  it('--help on the program and on every command: a description, usage, and exit code 0', async () => {
    const top = await cli(['--help']);
    expectOk(top);
    for (const group of ['organization', 'system-account', 'secret', 'certificate', 'user', 'application', 'audit', 'signing-key', 'db']) {
      expect(top.stdout).toContain(group);
    }
    expect(top.stdout).toMatch(/Exit codes:\s+0 {2}done\s+1 {2}refused/);
    const leaf = await cli(['user', 'set-password', '--help']);
    expectOk(leaf);
    expect(leaf.stdout).toContain('Usage: platform user set-password [options] <org> <id>');
    expect(leaf.stdout).toContain('standard input');

    // Every command of the program has a description and answers --help (walked in process).
    const walk = (command: Command, path: string[]): string[][] => [path, ...command.commands.flatMap((c) => walk(c, [...path, c.name()]))];
    const program = buildProgram();
    const commands = walk(program, []).slice(1);
    expect(commands.map((c) => c.join(' '))).toEqual(
      expect.arrayContaining([
        'organization create',
        'organization list',
        'organization get',
        'organization settings',
        'organization delete',
        'system-account create',
        'system-account list',
        'system-account get',
        'system-account update',
        'system-account delete',
        'secret create',
        'secret list',
        'secret revoke',
        'certificate upload',
        'certificate list',
        'certificate delete',
        'user create',
        'user list',
        'user platform-administrator',
        'user get',
        'user update',
        'user delete',
        'user enroll-certificate',
        'user set-password',
        'user enrolment-link',
        'group create',
        'group update',
        'device-policy create',
        'printer delete',
        'credential-policy set',
        'wallet-policy get',
        'application add',
        'application list',
        'application remove',
        'audit query',
        'ca revoke-generation',
        'db migrate',
      ]),
    );
    for (const path of commands) {
      let command = program;
      for (const name of path) command = command.commands.find((c) => c.name() === name)!;
      expect({ path, description: command.description() }).toEqual({ path, description: expect.stringMatching(/\S{3}/) });
      expect(command.helpInformation()).toContain(`Usage: platform ${path.join(' ')}`);
    }
  }, 30_000);

  it('exit codes: 2 for usage errors, 1 for refusals (not found, conflict, bad input), 3 for configuration and infrastructure', async () => {
    const unknownCommand = await cli(['organisation', 'list']);
    expect(unknownCommand.code).toBe(2);
    expect(unknownCommand.stderr).toContain("unknown command 'organisation'");
    const missingOption = await cli(['organization', 'create', 'x_org']);
    expect(missingOption.code).toBe(2);
    expect(missingOption.stderr).toContain("required option '--name <name>' not specified");
    const dashThumbprint = await cli(['certificate', 'delete', 'platform', 'platform-admin', '-Tlj5bgvYDkOM1tG8xayJVW8yZdLe7-1-f_m3D_Q8A']);
    expect(dashThumbprint.code).toBe(2);
    expect(dashThumbprint.stderr).toContain("unknown option '-Tlj5bgvYDkOM1tG8xayJVW8yZdLe7-1-f_m3D_Q8A'");
    expect(dashThumbprint.stderr).toContain("An argument that begins with '-' (a certificate thumbprint can) goes after --");
    expectRefused(
      await cli(['certificate', 'delete', 'platform', 'platform-admin', '--', '-Tlj5bgvYDkOM1tG8xayJVW8yZdLe7-1-f_m3D_Q8A']),
      /^Refused: .*-Tlj5bgvYDkOM1tG8xayJVW8yZdLe7-1-f_m3D_Q8A/,
    );
    const badBoolean = await cli(['system-account', 'update', 'platform', 'platform-admin', '--disabled', 'maybe']);
    expect(badBoolean.code).toBe(2);
    expect(badBoolean.stderr).toContain('must be true or false');

    expectRefused(await cli(['organization', 'get', 'no_such_org']), 'Organization "no_such_org" does not exist.');
    expectRefused(await cli(['organization', 'create', 'platform', '--name', 'Again']), 'Organization "platform" already exists.');
    expectRefused(await cli(['organization', 'create', 'has-hyphen', '--name', 'Bad']), 'id: must be 1-64 characters');

    const noDatabase = await cli(['organization', 'list'], { env: { DATABASE_URL: 'postgresql://nobody:nothing@127.0.0.1:1/none' } });
    expect(noDatabase.code).toBe(3);
    expect(noDatabase.stdout).toBe('');
    expect(noDatabase.stderr).toMatch(/^Failed: Cannot connect to PostgreSQL: .*Check DATABASE_URL\./);
    expect(noDatabase.stderr).not.toContain('nothing');
    const badConfiguration = await cli(['organization', 'list'], { env: { LOG_LEVEL: 'loud' } });
    expect(badConfiguration.code).toBe(3);
    expect(badConfiguration.stderr).toContain('LOG_LEVEL');
  }, 60_000);

  it('organizations, system accounts, secrets and certificates: JSON on stdout, visible through the API at once', async () => {
    const created = await cli(['organization', 'create', org, '--name', 'CLI Org']);
    expectOk(created);
    expect(created.json()).toEqual({
      id: org,
      name: 'CLI Org',
      settings: expect.objectContaining({ applicationIdPolicy: 'any' }),
      meta: expect.objectContaining({ location: `https://api.example.test/admin/v1/organizations/${org}` }),
    });
    expect((await api('get', `/organizations/${org}`)).body).toEqual(created.json());

    const settings = await cli([
      'organization',
      'settings',
      org,
      '--password-grant',
      'false',
      '--password-only-sign-in',
      'true',
      '--passwordless-sign-in',
      'true',
      '--access-token-lifetime',
      '900',
    ]);
    expectOk(settings);
    expect(settings.json()).toEqual({
      automaticDeviceCreation: false,
      applicationIdPolicy: 'any',
      passwordGrant: false,
      passwordOnlySignIn: true,
      passwordlessSignIn: true,
      accessTokenLifetime: 900,
    });
    expect((await api('get', `/organizations/${org}`)).body.settings).toEqual(settings.json());
    const listed = await cli(['organization', 'list', '--count', '1000']);
    expectOk(listed);
    expect(listed.json().Resources.map((o: { id: string }) => o.id)).toEqual(expect.arrayContaining(['platform', org]));

    const account = await cli(['system-account', 'create', org, '--role', 'Administration', '--suffix', 'ops', '--org-admin', '--description', 'break-glass']);
    expectOk(account);
    const accountView = account.json();
    secrets.push(accountView.secret.value);
    expect(accountView).toMatchObject({
      id: `${org}-ops`,
      clientId: `${org}-ops`,
      tokenUrl: `https://auth.example.test/authentication/customer/${org}/token`,
      role: 'Administration',
      organizationAdministrator: true,
      disabled: false,
      description: 'break-glass',
    });
    // The secret works at the token endpoint, and the account administers its organization over HTTP.
    const token = await tokenBySecret(t.http, org, accountView.clientId, accountView.secret.value);
    expect((await api('get', `/organizations/${org}/system-accounts`, token)).body.totalResults).toBe(1);
    expectRefused(await cli(['system-account', 'create', org, '--role', 'Issuance', '--suffix', 'ops']), `"${org}-ops" already exists`);

    const rotated = await cli(['secret', 'create', org, `${org}-ops`]);
    expectOk(rotated);
    secrets.push(rotated.json().value);
    const secretList = await cli(['secret', 'list', org, `${org}-ops`]);
    expectOk(secretList);
    expect(secretList.json().totalResults).toBe(2);
    expect(secretList.stdout).not.toContain(accountView.secret.value);
    expectOk(await cli(['secret', 'revoke', org, `${org}-ops`, accountView.secret.id]));
    const oldSecret = await tokenRequest(t.http, org, { grant_type: 'client_credentials', client_id: `${org}-ops`, client_secret: accountView.secret.value });
    expect(oldSecret.status).toBe(401);
    const newToken = await tokenBySecret(t.http, org, `${org}-ops`, rotated.json().value);

    const certificate = await makeCertificate();
    const pemFile = join(workDir, 'client.pem');
    writeFileSync(pemFile, certificate.pem);
    const uploaded = await cli(['certificate', 'upload', org, `${org}-ops`, pemFile]);
    expectOk(uploaded);
    expect(uploaded.json()).toMatchObject({ id: certificate.thumbprint, subject: expect.stringContaining('CN=') });
    expect((await api('get', `/organizations/${org}/system-accounts/${org}-ops/certificates`)).body.Resources.map((c: { id: string }) => c.id)).toEqual([
      certificate.thumbprint,
    ]);
    expectRefused(await cli(['certificate', 'upload', org, `${org}-ops`, join(workDir, 'missing.pem')]), 'Cannot read');
    // A thumbprint is base64url and may begin with '-': after `--` it is never read as an option.
    expectOk(await cli(['certificate', 'delete', org, `${org}-ops`, '--', certificate.thumbprint]));
    const certificates = await cli(['certificate', 'list', org, `${org}-ops`]);
    expectOk(certificates);
    expect(certificates.json()).toMatchObject({ totalResults: 0, Resources: [] });

    // Disabling stops the live token at once (the service hears the change); re-enabling does not revive it.
    expect((await whoami(newToken)).status).toBe(200);
    const disabled = await cli(['system-account', 'update', org, `${org}-ops`, '--disabled', 'true', '--role', 'Help Desk']);
    expectOk(disabled);
    expect(disabled.json()).toMatchObject({ clientId: `${org}-ops`, role: 'Help Desk', disabled: true });
    expect((await whoami(newToken)).headers['www-authenticate']).toMatch(/disabled/);
    expectOk(await cli(['system-account', 'update', org, `${org}-ops`, '--disabled', 'false']));
    expect((await whoami(newToken)).headers['www-authenticate']).toMatch(/revoked/);
    const got = await cli(['system-account', 'get', org, `${org}-ops`]);
    expectOk(got);
    expect(got.json()).toEqual((await api('get', `/organizations/${org}/system-accounts/${org}-ops`)).body);
  }, 90_000);

  it("disabling a user removes the user's authenticators in the same change, as through the API (issue 25 item 1)", async () => {
    const created = await api('post', `/organizations/${org}/users`).send({ userName: 'app.cli', role: 'Cardholder' });
    expect(created.status).toBe(201);
    const userId = created.body.id;
    // Stored directly: registration is test/authenticators' subject; this is the command line's disable.
    await t.db.query(
      `INSERT INTO authenticators (id, org_id, user_id, display_name, operating_system, push_handle, public_key, thumbprint, created_at, updated_at)
       VALUES ($1, $2, $3, 'Phone', 'Android', 'handle', '{}', 'thumbprint', now(), now())`,
      [randomUUID(), org, userId],
    );
    expectOk(await cli(['user', 'update', org, userId, '--disabled', 'true']));
    expect((await t.db.query('SELECT count(*)::int AS n FROM authenticators WHERE user_id = $1', [userId])).rows).toEqual([{ n: 0 }]);
    const events = await t.db.query(
      "SELECT actor, details->>'reason' AS reason FROM audit_events WHERE action = 'authenticator.remove' AND details->>'user' = $1",
      [userId],
    );
    expect(events.rows).toEqual([{ actor: 'cli', reason: 'userDisabled' }]);
    // The next test lists the organization's users.
    expect((await api('delete', `/organizations/${org}/users/${userId}`)).status).toBe(204);
  });

  it('users (password from standard input only), certified applications, audit query, and organization delete with --force', async () => {
    const created = await cli(
      ['user', 'create', org, '--user-name', 'card.cli', '--role', 'Cardholder', '--group', 'east', '--email', 'card@example.com', '--password-stdin'],
      { input: `${PASSWORD}\n` },
    );
    expectOk(created);
    const user = created.json();
    expect(user).toMatchObject({
      userName: 'card.cli',
      userType: 'cardholder',
      role: 'Cardholder',
      groups: ['east'],
      emails: [{ value: 'card@example.com', primary: true }],
      hasPassword: true,
      active: true,
    });
    expect(created.stdout).not.toContain(PASSWORD);
    // The organization switched the password grant off above; switch it on to use the password.
    expectOk(await cli(['organization', 'settings', org, '--password-grant', 'true']));
    const grant = (password: string) => tokenRequest(t.http, org, { grant_type: 'password', username: 'card.cli', password });
    expect((await grant(PASSWORD)).status).toBe(200);
    expectRefused(await cli(['user', 'set-password', org, user.id], { input: 'short\n' }), 'at least 12 characters');
    expectRefused(await cli(['user', 'set-password', org, user.id]), 'No password on standard input');
    expectOk(await cli(['user', 'set-password', org, user.id], { input: SECOND_PASSWORD }));
    expect((await grant(PASSWORD)).status).toBe(400);
    expect((await grant(SECOND_PASSWORD)).status).toBe(200);
    // An enrolment link (DECISIONS 14.4), by userName: printed once, it opens the person's enrolment page; an older one stops working.
    const firstLink = await cli(['user', 'enrolment-link', org, 'card.cli']);
    expectOk(firstLink);
    const link = await cli(['user', 'enrolment-link', org, 'card.cli']);
    expectOk(link);
    expect(link.json()).toEqual({
      userName: 'card.cli',
      id: user.id,
      url: expect.stringMatching(new RegExp(`/authentication/customer/${org}/enrol/[A-Za-z0-9_-]{43}$`)),
      expiresAt: expect.any(String),
    });
    expect((await t.bare.get(new URL(link.json().url).pathname)).text).toContain('Welcome, card.cli');
    expect((await t.bare.get(new URL(firstLink.json().url).pathname)).text).toContain('A newer enrolment link was made for you');
    expectRefused(await cli(['user', 'enrolment-link', org, 'nobody.here']), 'There is no user "nobody.here"');

    const updated = await cli(['user', 'update', org, user.id, '--role', 'Help Desk', '--group', 'west', '--group', 'north']);
    expectOk(updated);
    expect(updated.json()).toMatchObject({ role: 'Help Desk', groups: ['west', 'north'] });
    expect((await api('get', `/organizations/${org}/users/${user.id}`)).body).toEqual(updated.json());
    const operator = await cli(['user', 'create', org, '--user-name', 'op.cli', '--role', 'Issuance', '--type', 'operator']);
    expectOk(operator);
    const pemFile = join(workDir, 'operator.pem');
    const certificate = await makeCertificate();
    writeFileSync(pemFile, certificate.pem);
    const enrolled = await cli(['user', 'enroll-certificate', org, operator.json().id, pemFile]);
    expectOk(enrolled);
    expect(enrolled.json().id).toBe(certificate.thumbprint);
    const users = await cli(['user', 'list', org]);
    expectOk(users);
    expect(users.json().Resources.map((u: { userName: string }) => u.userName)).toEqual(['card.cli', 'op.cli']);
    expectOk(await cli(['user', 'delete', org, operator.json().id]));
    expectRefused(await cli(['user', 'get', org, operator.json().id]), 'does not exist');

    // A user whose card holds live credentials: only the service (with its HSM) revokes their certificates.
    const holder = await cli(['user', 'create', org, '--user-name', 'holder.cli', '--role', 'Cardholder']);
    expectOk(holder);
    const card = randomUUID();
    await t.db.query(
      "INSERT INTO devices (id, org_id, status, reason, owner_user_id, created_at, updated_at) VALUES ($1, $2, 'ISSUED', 'NONE', $3, now(), now())",
      [card, org, holder.json().id],
    );
    await t.db.query(
      `INSERT INTO credentials (id, org_id, type, status, device_id, wallet_id, created_at, updated_at)
       SELECT $1, $2, 'STATIC_PASSWORD', 'ISSUED', $3, w.id, now(), now() FROM wallets w WHERE w.owner_user_id = $4`,
      [randomUUID(), org, card, holder.json().id],
    );
    expectRefused(
      await cli(['user', 'delete', org, holder.json().id, '--force']),
      `Device ${card} holds 1 live credential, whose certificates only the service can revoke (the command line has no HSM); do this through the API`,
    );
    expect((await t.db.query('SELECT status FROM devices WHERE id = $1', [card])).rows[0].status).toBe('ISSUED');
    // Without live credentials the forced delete goes through (the card is terminated, then left unowned).
    await t.db.query('DELETE FROM credentials WHERE device_id = $1', [card]);
    expectOk(await cli(['user', 'delete', org, holder.json().id, '--force']));
    expect((await t.db.query('SELECT status, owner_user_id FROM devices WHERE id = $1', [card])).rows[0]).toEqual({
      status: 'TERMINATED',
      owner_user_id: null,
    });
    await t.db.query('DELETE FROM devices WHERE id = $1', [card]);

    expectOk(await cli(['application', 'add', org, 'com.cli.app', '--name', 'CLI app']));
    const apps = await cli(['application', 'list', org]);
    expectOk(apps);
    expect(apps.json()).toMatchObject({ totalResults: 1, Resources: [{ applicationId: 'com.cli.app', name: 'CLI app' }] });
    expect((await api('get', `/organizations/${org}/applications`)).body.Resources).toEqual(apps.json().Resources);
    expectOk(await cli(['application', 'remove', org, 'com.cli.app']));

    const trail = await cli(['audit', 'query', '--org', org, '--actor', 'cli', '--count', '1000']);
    expectOk(trail);
    const actions = trail.json().Resources.map((e: { action: string }) => e.action);
    expect(actions).toEqual(
      expect.arrayContaining([
        'organization.create',
        'organization.settings.update',
        'system_account.create',
        'system_account.update',
        'client_secret.create',
        'client_secret.revoke',
        'client_certificate.upload',
        'client_certificate.delete',
        'user.create',
        'user.password.set',
        'user.update',
        'user.certificate.enroll',
        'user.delete',
        'application.certify',
        'application.uncertify',
      ]),
    );
    expect(new Set(trail.json().Resources.map((e: { actor: string; org: string }) => `${e.actor} ${e.org}`))).toEqual(new Set([`cli ${org}`]));
    const viaApi = await t.http.get(`/admin/v1/organizations/${org}/audit-events?actor=cli&count=1000`).auth(admin, { type: 'bearer' });
    expect(viaApi.body.Resources).toEqual(trail.json().Resources);

    expectRefused(await cli(['organization', 'delete', org]), 'still has 1 system account, 1 user, 0 devices');
    const deleted = await cli(['organization', 'delete', org, '--force']);
    expectOk(deleted);
    expect(deleted.json()).toEqual({ deleted: org, force: true, removed: { systemAccounts: 1, users: 1, devices: 0 } });
    expect((await api('get', `/organizations/${org}`)).status).toBe(404);
    // The audit events of a deleted organization stay readable from the command line.
    const kept = await cli(['audit', 'query', '--org', org, '--action', 'organization.delete']);
    expectOk(kept);
    expect(kept.json().Resources).toEqual([
      expect.objectContaining({
        actor: 'cli',
        action: 'organization.delete',
        target: org,
        outcome: 'success',
        details: { force: true, removed: { systemAccounts: 1, users: 1, devices: 0 } },
      }),
    ]);

    // No secret the command line handled reached the audit log, its own output on stderr, or the service's logs.
    const logs = t.logs.join('');
    for (const value of secrets) {
      expect((await t.db.query('SELECT id FROM audit_events a WHERE position($1 in row_to_json(a)::text) > 0', [value])).rows).toEqual([]);
      expect({ value, inStderr: stderrSeen.includes(value), inLogs: logs.includes(value) }).toEqual({ value, inStderr: false, inLogs: false });
    }
  }, 120_000);

  it('credential-management reference data: groups, device policies, printers and the global policies, as the admin API has them', async () => {
    const refOrg = `${org}_ref`;
    expectOk(await cli(['organization', 'create', refOrg, '--name', 'Reference data']));
    const member = await api('post', `/organizations/${refOrg}/users`).send({ userName: 'member.cli', role: 'Cardholder' });
    expect(member.status).toBe(201);
    const group = await cli(['group', 'create', refOrg, '--display-name', 'Berlin', '--member', member.body.id]);
    expectOk(group);
    expect(group.json()).toMatchObject({ displayName: 'Berlin', members: [{ value: member.body.id, display: 'member.cli' }] });
    expect((await api('get', `/organizations/${refOrg}/users/${member.body.id}`)).body.groups).toEqual(['Berlin']);
    expectRefused(await cli(['group', 'create', refOrg, '--display-name', 'Berlin']), 'A group named "Berlin" already exists in this organization.');
    expectRefused(await cli(['group', 'create', 'no_such_org', '--display-name', 'X']), 'Organization "no_such_org" does not exist.');
    const renamed = await cli(['group', 'update', refOrg, group.json().id, '--display-name', 'Berlin Mitte', '--no-members']);
    expectOk(renamed);
    expect(renamed.json()).toMatchObject({ displayName: 'Berlin Mitte', members: [] });

    const policy = await cli([
      'device-policy',
      'create',
      refOrg,
      '--name',
      'Badge',
      '--credential-type',
      'PKI_CERTIFICATE',
      '--credential-type',
      'OATH_TOTP',
      '--group',
      group.json().id,
      '--requires-approval',
      'false',
    ]);
    expectOk(policy);
    expect(policy.json()).toMatchObject({
      name: 'Badge',
      credentialTypes: ['PKI_CERTIFICATE', 'OATH_TOTP'],
      groups: [{ value: group.json().id, display: 'Berlin Mitte' }],
      requiresApproval: false,
    });
    expect((await api('get', `/organizations/${refOrg}/device-policies/${policy.json().id}`)).body).toEqual(policy.json());
    expect((await cli(['device-policy', 'create', refOrg, '--name', 'X', '--credential-type', 'PASSWORD'])).code).toBe(2);

    const printer = await cli(['printer', 'create', refOrg, '--name', 'Desk 1', '--status', 'OFFLINE']);
    expectOk(printer);
    const printers = await cli(['printer', 'list', refOrg, '--filter', 'status eq "OFFLINE"']);
    expectOk(printers);
    expect(printers.json()).toMatchObject({ totalResults: 1, Resources: [{ name: 'Desk 1', status: 'OFFLINE' }] });
    expectOk(await cli(['printer', 'delete', refOrg, printer.json().id]));

    const credential = await cli(['credential-policy', 'set', refOrg, '--certificate-lifetime-days', '90', '--key-algorithm', 'EC-P384']);
    expectOk(credential);
    expect(credential.json()).toMatchObject({ id: 'global', certificateLifetimeDays: 90, keyAlgorithms: ['EC-P384'], oathDigits: 6, meta: { version: '1' } });
    expectRefused(await cli(['credential-policy', 'set', refOrg, '--certificate-lifetime-days', '4000']), 'certificateLifetimeDays: must be at most 1825');
    expect((await cli(['wallet-policy', 'set', refOrg, '--max-devices-per-wallet', 'many'])).code).toBe(2);
    expectOk(await cli(['wallet-policy', 'set', refOrg, '--allow-self-service', 'false']));
    expect((await cli(['wallet-policy', 'get', refOrg])).json()).toMatchObject({ maxDevicesPerWallet: 3, allowSelfService: false });
    expect((await api('get', `/organizations/${refOrg}/credential-policy`)).body).toMatchObject({ certificateLifetimeDays: 90 });
    const audit = await t.db.query("SELECT code FROM audit_events WHERE org_id = $1 AND actor = 'cli' AND code BETWEEN 73000 AND 73999 ORDER BY id", [refOrg]);
    expect(audit.rows.map((r) => r.code)).toEqual([73001, 73002, 73101, 73201, 73203, 73301, 73302]);
  }, 90_000); // fifteen CLI processes, each a fresh Node start: ~22 s alone, longer beside other suites

  it('people administer: --organization-administrator, and platform-administrator hands the one platform administrator role over (DECISIONS 11)', async () => {
    const people = `${org}_people`;
    expectOk(await cli(['organization', 'create', people, '--name', 'People']));
    const created = await cli([
      'user',
      'create',
      people,
      '--user-name',
      'boss.cli',
      '--role',
      'Administration',
      '--type',
      'operator',
      '--organization-administrator',
    ]);
    expectOk(created);
    expect(created.json()).toMatchObject({ userName: 'boss.cli', organizationAdministrator: true, platformAdministrator: false });
    const demoted = await cli(['user', 'update', people, created.json().id, '--organization-administrator', 'false']);
    expectOk(demoted);
    expect(demoted.json().organizationAdministrator).toBe(false);

    const first = await cli(['user', 'create', 'platform', '--user-name', 'first.root', '--role', 'Administration', '--type', 'operator']);
    const second = await cli(['user', 'create', 'platform', '--user-name', 'second.root', '--role', 'Administration', '--type', 'operator']);
    expectOk(await cli(['user', 'platform-administrator', first.json().id]));
    const handedOver = await cli(['user', 'platform-administrator', second.json().id]);
    expectOk(handedOver);
    expect(handedOver.json()).toMatchObject({ userName: 'second.root', platformAdministrator: true });
    const holders = await t.db.query('SELECT user_name FROM users WHERE platform_administrator');
    expect(holders.rows).toEqual([{ user_name: 'second.root' }]);
    const audit = await t.db.query(
      "SELECT target, details FROM audit_events WHERE actor = 'cli' AND org_id = 'platform' AND action = 'user.update' ORDER BY id",
    );
    expect(audit.rows.slice(-2)).toEqual([
      { target: first.json().id, details: { changed: ['platformAdministrator'], platformAdministrator: false } },
      { target: second.json().id, details: { userName: 'second.root', changed: ['platformAdministrator'], platformAdministrator: true } },
    ]);
    // A user of another organization is not found in `platform`.
    expectRefused(await cli(['user', 'platform-administrator', created.json().id]), 'does not exist in organization "platform"');
  }, 90_000); // fourteen CLI processes, like the test above: past 30 s on a slower 2-core host beside other suites

  it('ca revoke-generation: the reason is required, an unknown generation refused; the revocation revokes the leaves, re-signs the CRL and stops issuance; audited as cli', async () => {
    const caOrg = `clica_${randomBytes(3).toString('hex')}`;
    await createOrganization(t.http, admin, caOrg);
    expect((await api('post', `/organizations/${caOrg}/ca`).send({})).status).toBe(201);
    const authority = t.app.get(CertificateAuthority);
    const subject = { userId: randomUUID(), userName: 'ca.cli', displayName: null, email: null, userPrincipalName: null, objectSid: null };
    const csr = () => {
      const dir = join(workDir, randomBytes(3).toString('hex'));
      mkdirSync(dir);
      return opensslCsr(dir);
    };
    const leaf = await authority.issue(caOrg, subject, csr(), 'CLI Corp', { name: 'cli-suite' });

    expect((await cli(['ca', 'revoke-generation', caOrg, '1'])).code).toBe(2);
    expect((await cli(['ca', 'revoke-generation', caOrg, '1', '--reason', 'keyCompromise'])).code).toBe(2);
    expectRefused(await cli(['ca', 'revoke-generation', caOrg, 'one', '--reason', 'cACompromise']), 'The generation must be a positive whole number');
    expectRefused(await cli(['ca', 'revoke-generation', caOrg, '4', '--reason', 'cACompromise']), `The CA of "${caOrg}" has no generation 4`);

    const revoked = await cli(['ca', 'revoke-generation', caOrg, '1', '--reason', 'cACompromise']);
    expectOk(revoked);
    expect(revoked.json()).toMatchObject({
      generation: 1,
      reason: 'cACompromise',
      revokedCertificates: 1,
      crlsPublished: [1],
      certificateAuthority: { id: caOrg, generation: 1, compromisedAt: revoked.json().compromisedAt },
    });
    expect((await t.db.query('SELECT status, reason FROM issued_certificates WHERE org_id = $1 AND serial = $2', [caOrg, leaf.serialNumber])).rows).toEqual([
      { status: 'revoked', reason: 'cACompromise' },
    ]);
    // The service refuses to issue under the revoked generation (its cached row or the database, whichever decides first).
    await expect(authority.issue(caOrg, subject, csr(), 'CLI Corp', { name: 'cli-suite' })).rejects.toMatchObject({
      code: 'CONFLICT',
      detail: expect.stringContaining('a renewal is needed first'),
    });
    expectRefused(await cli(['ca', 'revoke-generation', caOrg, '1', '--reason', 'cACompromise']), 'was revoked already');
    const audit = await t.db.query('SELECT code, actor FROM audit_events WHERE org_id = $1 AND code IN (60003, 60009) ORDER BY id', [caOrg]);
    expect(audit.rows).toEqual([
      { code: 60009, actor: 'cli' },
      { code: 60003, actor: 'cli' },
    ]);
  }, 90_000); // six CLI processes that open the HSM: past 60 s on a slower 2-core host beside other suites

  it('signing-key: generate, a refused early activation, activation (with no delay) that the service signs with, withdraw; audited as cli', async () => {
    // A kid is base64url and may begin with '-': it goes after --, which ends the options (as a thumbprint does).
    const kidOf = (jws: string) => (JSON.parse(Buffer.from(jws.split('.')[0], 'base64url').toString('utf8')) as { kid: string }).kid;
    const listed = await cli(['signing-key', 'list']);
    expectOk(listed);
    const [active] = (listed.json() as { Resources: Array<{ kid: string; state: string }> }).Resources.filter((key) => key.state === 'active');
    expect((await cli(['signing-key', 'generate', 'EC-P384'])).code).toBe(2);

    const next = await cli(['signing-key', 'generate', 'EC-P256']);
    expectOk(next);
    const kid = next.json().kid as string;
    expect(next.json()).toMatchObject({ state: 'next', algorithm: 'ES256', hsmLabel: expect.stringMatching(/^JWT_KEY\//) });
    const jwks = await t.http.get(`/authentication/customer/${org}/.well-known/jwks.json`).expect(200);
    expect((jwks.body.keys as Array<{ kid: string }>).map((key) => key.kid)).toContain(kid);
    expectRefused(await cli(['signing-key', 'activate', '--', kid]), `Key ${kid} cannot sign before`);
    expectRefused(await cli(['signing-key', 'activate', '--at', 'tomorrow', '--', kid]), '--at must be an ISO 8601 date-time');

    // The service process signs with the key the command line made in the shared HSM token.
    const activated = await cli(['signing-key', 'activate', '--', kid], { env: { JWKS_PUBLICATION_DELAY_S: '0' } });
    expectOk(activated);
    expect(activated.json()).toMatchObject({ kid, state: 'active' });
    // The service hears of the activation through the change feed within milliseconds.
    let account = '';
    for (let i = 0; i < 40 && (account === '' || kidOf(account) !== kid); i++) {
      if (account !== '') await new Promise((resolve) => setTimeout(resolve, 50));
      account = await tokenBySecret(t.http, 'platform', 'platform-admin', PLATFORM_ADMIN_SECRET);
    }
    expect(kidOf(account)).toBe(kid);
    expect((await api('get', '/signing-keys', account)).status).toBe(200);

    const spare = await cli(['signing-key', 'generate', 'EC-P256']);
    expectOk(spare);
    const withdrawn = await cli(['signing-key', 'retire', '--', spare.json().kid]);
    expectOk(withdrawn);
    expect(withdrawn.json()).toMatchObject({ kid: spare.json().kid, state: 'retired' });
    expectRefused(await cli(['signing-key', 'retire', '--', kid]), 'is the active key');
    const audit = await t.db.query("SELECT code, target FROM audit_events WHERE actor = 'cli' AND code BETWEEN 81000 AND 81999 ORDER BY id");
    expect(audit.rows).toEqual([
      { code: 81001, target: kid },
      { code: 81003, target: active.kid },
      { code: 81002, target: kid },
      { code: 81001, target: spare.json().kid },
      { code: 81003, target: spare.json().kid },
    ]);
  }, 90_000);

  it('signing-key withdraw: the active key is replaced at once, the service refuses its tokens and signs with the new key; audited as cli', async () => {
    const kidOf = (jws: string) => (JSON.parse(Buffer.from(jws.split('.')[0], 'base64url').toString('utf8')) as { kid: string }).kid;
    const before = await tokenBySecret(t.http, 'platform', 'platform-admin', PLATFORM_ADMIN_SECRET);
    const compromised = kidOf(before);
    expect((await api('get', '/signing-keys', before)).status).toBe(200);
    // --reason is required (commander's usage error, exit code 2), and an empty one is refused.
    expect((await cli(['signing-key', 'withdraw', '--', compromised])).code).toBe(2);
    expectRefused(await cli(['signing-key', 'withdraw', '--reason', ' ', '--', compromised]), '--reason must say why');

    const withdrawn = await cli(['signing-key', 'withdraw', '--reason', 'HSM backup tape lost', '--', compromised]);
    expectOk(withdrawn);
    expect(withdrawn.json()).toMatchObject({ kid: compromised, state: 'retired', withdrawReason: 'HSM backup tape lost', replacedBy: { state: 'active' } });
    const replacement = withdrawn.json().replacedBy.kid as string;
    // The service hears of it through the change feed within milliseconds: the old token refused, new ones signed by the new key.
    let status = 0;
    for (let i = 0; i < 40 && status !== 401; i++) {
      if (status !== 0) await new Promise((resolve) => setTimeout(resolve, 50));
      status = (await api('get', '/signing-keys', before)).status;
    }
    expect(status).toBe(401);
    const after = await tokenBySecret(t.http, 'platform', 'platform-admin', PLATFORM_ADMIN_SECRET);
    expect(kidOf(after)).toBe(replacement);
    expect((await api('get', '/signing-keys', after)).status).toBe(200);
    const jwks = await t.http.get(`/authentication/customer/${org}/.well-known/jwks.json`).expect(200);
    expect((jwks.body.keys as Array<{ kid: string }>).map((key) => key.kid)).not.toContain(compromised);
    const audit = await t.db.query("SELECT code, target, details FROM audit_events WHERE actor = 'cli' AND code BETWEEN 81000 AND 81999 ORDER BY id");
    expect(audit.rows.slice(-3)).toEqual([
      { code: 81007, target: compromised, details: { reason: 'HSM backup tape lost', replacedBy: replacement } },
      { code: 81001, target: replacement, details: expect.objectContaining({ algorithm: 'ES256' }) },
      { code: 81002, target: replacement, details: { replaces: compromised, withdrawal: true } },
    ]);
  }, 90_000);
});
