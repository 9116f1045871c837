import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
