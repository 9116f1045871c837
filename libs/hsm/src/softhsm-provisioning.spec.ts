import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runInThisContext } from 'node:vm';
import { HsmConfigurationError } from './hsm.errors';
import { ensureSoftHsmToken, generateSoftHsmKey } from './softhsm-provisioning';

// No PKCS#11 in this process: everything here goes through the SoftHSM command-line tools.
let directory: string;
const token = { tokenLabel: 'provisioning-spec', soPin: '12345678', pin: '87654321' };

beforeEach(() => {
  directory = mkdtempSync(join(tmpdir(), 'hsm-provisioning-'));
});

afterEach(() => rmSync(directory, { recursive: true, force: true }));

function showSlots(configPath: string): string {
  return execFileSync('softhsm2-util', ['--show-slots'], { env: { ...process.env, SOFTHSM2_CONF: configPath }, encoding: 'utf8' });
}

it('writes a private token folder and config, points SOFTHSM2_CONF at it and initializes the token once', () => {
  const first = ensureSoftHsmToken({ directory, ...token });
  const second = ensureSoftHsmToken({ directory, ...token });

  expect(second).toEqual(first);
  expect(first.configPath).toBe(join(directory, 'softhsm2.conf'));
  expect(['/usr/lib/softhsm/libsofthsm2.so', '/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so']).toContain(first.modulePath);
  expect(process.env.SOFTHSM2_CONF).toBe(first.configPath);
  expect(statSync(join(directory, 'tokens')).mode & 0o777).toBe(0o700);
  expect(readFileSync(first.configPath, 'utf8')).toContain(
    `directories.tokendir = ${join(directory, 'tokens')}\nobjectstore.backend = file\nlog.level = ERROR\n`,
  );
  expect(showSlots(first.configPath).match(/Label:\s+provisioning-spec\s*$/gm)).toHaveLength(1);
});

it('generates a key pair under a label with a random CKA_ID', () => {
  const { keyId } = generateSoftHsmKey({ directory, ...token, keyLabel: 'RSA_KEY', keyType: 'RSA' });
  const { modulePath, configPath } = ensureSoftHsmToken({ directory, ...token });
  const objects = execFileSync(
    'pkcs11-tool',
    ['--module', modulePath, '--token-label', token.tokenLabel, '--login', '--pin', token.pin, '--list-objects', '--type', 'privkey'],
    { env: { ...process.env, SOFTHSM2_CONF: configPath }, encoding: 'utf8' },
  );

  expect(keyId).toMatch(/^[0-9a-f]{32}$/);
  expect(objects).toContain('label:      RSA_KEY');
  expect(objects).toContain(`ID:         ${keyId}`);
  expect(objects).toMatch(/Private Key Object; RSA/);
});

it('says how to install SoftHSM2 when softhsm2-util is missing', () => {
  const path = process.env.PATH;
  process.env.PATH = directory;
  try {
    expect(() => ensureSoftHsmToken({ directory, ...token })).toThrow(HsmConfigurationError);
    expect(() => ensureSoftHsmToken({ directory, ...token })).toThrow('softhsm2-util not found: install SoftHSM2 with `apt-get install -y softhsm2`');
  } finally {
    process.env.PATH = path;
  }
});

it("keeps the PINs out of a failing tool's error", () => {
  const error: unknown = (() => {
    try {
      return ensureSoftHsmToken({ directory, tokenLabel: 'a'.repeat(40), soPin: 'so-secret-1', pin: 'user-secret-1' });
    } catch (failure: unknown) {
      return failure;
    }
  })();
  expect(error).toBeInstanceOf(HsmConfigurationError);
  expect((error as HsmConfigurationError).code).toBe('HSM_SOFTHSM_FAILED');
  expect((error as Error).message).not.toMatch(/secret/);
});

it('never initializes a second token into a folder that holds one under another label', () => {
  const { configPath } = ensureSoftHsmToken({ directory, ...token, tokenLabel: 'someone-else' });
  const before = readdirSync(join(directory, 'tokens'));
  expect(() => ensureSoftHsmToken({ directory, ...token })).toThrow(
    new RegExp(`holds SoftHSM2 tokens but none labelled "provisioning-spec" \\(found "someone-else" in .*\\): set PKCS11_TOKEN_LABEL`),
  );
  expect(readdirSync(join(directory, 'tokens'))).toEqual(before);
  expect(showSlots(configPath)).not.toMatch(/Label:\s+provisioning-spec/);
});

describe('a token in use by another process (SoftHSM2 rewrites token.object at every login)', () => {
  // Logs in and out in a loop, as service processes do when they start, until a stop file appears,
  // then stops cleanly: a process killed while SoftHSM2 rewrites token.object leaves it empty.
  const LOGIN_LOOP = `
const pkcs11js = require(${JSON.stringify(require.resolve('pkcs11js'))});
const [modulePath, tokenLabel, pin, stopFile] = process.argv.slice(1);
const pkcs11 = new pkcs11js.PKCS11();
pkcs11.load(modulePath);
pkcs11.C_Initialize({ flags: pkcs11js.CKF_OS_LOCKING_OK });
const slot = pkcs11.C_GetSlotList(true).find((s) => pkcs11.C_GetTokenInfo(s).label.trim() === tokenLabel);
process.stdout.write('logging in\\n');
while (!require('node:fs').existsSync(stopFile)) {
  const session = pkcs11.C_OpenSession(slot, pkcs11js.CKF_SERIAL_SESSION);
  pkcs11.C_Login(session, pkcs11js.CKU_USER, pin);
  pkcs11.C_Logout(session);
  pkcs11.C_CloseSession(session);
}
pkcs11.C_Finalize();
`;

  it('is never provisioned a second time while another process logs in to it (300 provisionings)', async () => {
    const options = { directory, ...token };
    const { modulePath, configPath } = ensureSoftHsmToken(options);
    const stopFile = join(directory, 'stop');
    const child = spawn(process.execPath, ['-e', LOGIN_LOOP, modulePath, token.tokenLabel, token.pin, stopFile], {
      env: { ...process.env, SOFTHSM2_CONF: configPath },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    await new Promise((resolve) => child.stdout.once('data', resolve));
    try {
      for (let i = 0; i < 300; i++) {
        ensureSoftHsmToken(options);
      }
    } finally {
      writeFileSync(stopFile, '');
      await exited;
    }
    expect(showSlots(configPath).match(/Label:\s+provisioning-spec\s*$/gm)).toHaveLength(1);
    expect(readdirSync(join(directory, 'tokens'))).toHaveLength(1);
    // Each provisioning runs softhsm2-util: on a loaded 2-core host 300 of them took over 30 s.
  }, 120_000);
});

describe('a data folder with two tokens under the label (left by the old concurrent provisioning)', () => {
  // The inspection uses pkcs11js in this process, and SoftHSM reads SOFTHSM2_CONF from the real
  // environment, which Jest's per-file copy of process.env is not.
  const realEnv = (runInThisContext('process') as NodeJS.Process).env;
  let previousConfig: string | undefined;
  const warnings: Array<{ fields: object | string; message?: string }> = [];
  const logger = { info: () => undefined, warn: (fields: object | string, message?: string) => warnings.push({ fields, message }), error: () => undefined };

  beforeEach(() => {
    previousConfig = realEnv.SOFTHSM2_CONF;
    realEnv.SOFTHSM2_CONF = join(directory, 'softhsm2.conf');
    warnings.length = 0;
  });

  afterEach(() => {
    if (previousConfig === undefined) delete realEnv.SOFTHSM2_CONF;
    else realEnv.SOFTHSM2_CONF = previousConfig;
  });

  /** A second token under the label, made the way the race made it. */
  function duplicate(configPath: string): string {
    const before = readdirSync(join(directory, 'tokens'));
    execFileSync('softhsm2-util', ['--init-token', '--free', '--label', token.tokenLabel, '--so-pin', token.soPin, '--pin', token.pin], {
      env: { ...process.env, SOFTHSM2_CONF: configPath },
      stdio: 'ignore',
    });
    return readdirSync(join(directory, 'tokens')).find((folder) => !before.includes(folder))!;
  }

  it('moves the empty duplicate aside and keeps the token with the keys, saying which folder went where', () => {
    generateSoftHsmKey({ directory, ...token, keyLabel: 'JWT_KEY', keyType: 'EC' });
    const [original] = readdirSync(join(directory, 'tokens'));
    const { configPath } = ensureSoftHsmToken({ directory, ...token });
    const empty = duplicate(configPath);

    ensureSoftHsmToken({ directory, ...token, logger });

    expect(readdirSync(join(directory, 'tokens'))).toEqual([original]);
    expect(readdirSync(join(directory, 'duplicate-tokens'))).toEqual([empty]);
    expect(showSlots(configPath).match(/Label:\s+provisioning-spec\s*$/gm)).toHaveLength(1);
    expect(warnings).toEqual([
      {
        fields: { tokenLabel: token.tokenLabel, kept: join(directory, 'tokens', original!), movedAside: join(directory, 'duplicate-tokens', empty) },
        message: 'found 2 SoftHSM2 tokens labelled "provisioning-spec"; moved the empty duplicate aside (made by concurrent provisioning; it held no objects)',
      },
    ]);
  });

  it('refuses when both hold keys, naming each folder and its keys, and moves nothing', () => {
    generateSoftHsmKey({ directory, ...token, keyLabel: 'JWT_KEY', keyType: 'EC' });
    const [original] = readdirSync(join(directory, 'tokens'));
    const { configPath, modulePath } = ensureSoftHsmToken({ directory, ...token });
    const second = duplicate(configPath);
    // pkcs11-tool picks the second token by its slot, found by serial (the folder name ends with it).
    const serial = second.replace(/-/g, '').slice(-16);
    const slot = showSlots(configPath)
      .split(/^Slot /m)
      .find((entry) => entry.includes(`Serial number:    ${serial}`))!
      .split('\n')[0]!
      .trim();
    execFileSync(
      'pkcs11-tool',
      ['--module', modulePath, '--slot', slot, '--login', '--pin', token.pin, '--keypairgen', '--key-type', 'EC:prime256v1', '--label', 'CA_KEY/acme'],
      { env: { ...process.env, SOFTHSM2_CONF: configPath }, stdio: 'ignore' },
    );

    let error: unknown;
    try {
      ensureSoftHsmToken({ directory, ...token, logger });
    } catch (refused) {
      error = refused;
    }
    expect(error).toBeInstanceOf(HsmConfigurationError);
    expect((error as HsmConfigurationError).code).toBe('HSM_TOKEN_AMBIGUOUS');
    const message = (error as Error).message;
    expect(message).toMatch(/^2 SoftHSM2 tokens are labelled "provisioning-spec", so the service cannot tell which holds its keys: /);
    expect(message).toContain(`${join(directory, 'tokens', original!)} holds 2 objects, private keys "JWT_KEY"`);
    expect(message).toContain(`${join(directory, 'tokens', second)} holds 2 objects, private keys "CA_KEY/acme"`);
    expect(message).toContain(`move the other folders out of ${join(directory, 'tokens')}`);
    expect(message).not.toContain(token.pin);
    expect(readdirSync(join(directory, 'tokens')).sort()).toEqual([original, second].sort());
  });

  it('of two empty tokens keeps the older one', () => {
    const { configPath } = ensureSoftHsmToken({ directory, ...token });
    const [original] = readdirSync(join(directory, 'tokens'));
    const later = duplicate(configPath);

    ensureSoftHsmToken({ directory, ...token, logger });

    expect(readdirSync(join(directory, 'tokens'))).toEqual([original]);
    expect(readdirSync(join(directory, 'duplicate-tokens'))).toEqual([later]);
  });
});

describe('a token whose token.object a killed process left empty (SoftHSM2 rewrites it in place at every login)', () => {
  it('is restored from the backup the last provisioning kept, keys and PIN intact, and the restore is logged', () => {
    const { keyId } = generateSoftHsmKey({ directory, ...token, keyLabel: 'JWT_KEY', keyType: 'EC' });
    const { modulePath, configPath } = ensureSoftHsmToken({ directory, ...token });
    const [folder] = readdirSync(join(directory, 'tokens'));
    const tokenObject = join(directory, 'tokens', folder!, 'token.object');
    expect(readFileSync(join(directory, 'token-backups', folder!, 'token.object'))).toEqual(readFileSync(tokenObject));
    expect(statSync(join(directory, 'token-backups', folder!, 'token.object')).mode & 0o777).toBe(0o600);
    writeFileSync(tokenObject, '');
    expect(showSlots(configPath)).not.toMatch(/Label:\s+provisioning-spec/);

    const warnings: unknown[] = [];
    ensureSoftHsmToken({
      directory,
      ...token,
      logger: { info: () => undefined, warn: (fields: object | string) => warnings.push(fields), error: () => undefined },
    });

    expect(readdirSync(join(directory, 'tokens'))).toEqual([folder]);
    expect(showSlots(configPath).match(/Label:\s+provisioning-spec\s*$/gm)).toHaveLength(1);
    expect(warnings).toEqual([
      { tokenFolder: join(directory, 'tokens', folder!), unreadableBytes: 0, backup: join(directory, 'token-backups', folder!, 'token.object') },
    ]);
    const objects = execFileSync(
      'pkcs11-tool',
      ['--module', modulePath, '--token-label', token.tokenLabel, '--login', '--pin', token.pin, '--list-objects', '--type', 'privkey'],
      { env: { ...process.env, SOFTHSM2_CONF: configPath }, encoding: 'utf8' },
    );
    expect(objects).toContain(`ID:         ${keyId}`);
  });

  it('without a backup, names the folder to move away instead of making a second token', () => {
    const { configPath } = ensureSoftHsmToken({ directory, ...token });
    const [folder] = readdirSync(join(directory, 'tokens'));
    rmSync(join(directory, 'token-backups'), { recursive: true });
    writeFileSync(join(directory, 'tokens', folder!, 'token.object'), '');

    expect(() => ensureSoftHsmToken({ directory, ...token })).toThrow(
      `SoftHSM2 does not list the token in ${join(directory, 'tokens', folder!)}: its token.object is unreadable`,
    );
    expect(readdirSync(join(directory, 'tokens'))).toEqual([folder]);
    expect(showSlots(configPath)).not.toMatch(/Label:\s+provisioning-spec/);
  });
});
