import 'reflect-metadata';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { Pkcs11Hsm } from './pkcs11-hsm';
import { Pkcs11KeyStore } from './pkcs11-key-store.adapter';
import { TOKEN_DES3_SECRET_KEY } from './pkcs11-keys';
import { createTemporarySoftHsmToken, type TemporarySoftHsmToken } from './testing/temporary-softhsm-token';

// The DES3 secret key card administration keys are diversified from (DECISIONS 17.1): generated at
// first use in the token, sensitive and never extractable, exactly one under its label.
let token: TemporarySoftHsmToken;
let hsm: Pkcs11Hsm;
let keyStore: Pkcs11KeyStore;
const LABEL = 'CARD_ADMIN_MASTER_KEY';

beforeAll(async () => {
  token = createTemporarySoftHsmToken('secret-key-spec');
  token.generateKey('JWT_KEY', 'EC');
  hsm = await Pkcs11Hsm.connect({ modulePath: token.modulePath, tokenLabel: token.tokenLabel, pin: token.pin });
  keyStore = new Pkcs11KeyStore(hsm);
});

afterAll(async () => {
  await hsm.close();
  token.remove();
});

/** The token's secret keys as OpenSC's pkcs11-tool lists them, logged in, from another process. */
function listSecretKeys(): string {
  return execFileSync(
    'pkcs11-tool',
    ['--module', token.modulePath, '--token-label', token.tokenLabel, '--login', '--pin', token.pin, '--list-objects', '--type', 'secrkey'],
    {
      env: { ...process.env, SOFTHSM2_CONF: join(token.options.directory, 'softhsm2.conf') },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
}

/**
 * A DES3 key under the label, made by another process (pkcs11-tool's DES3 key generation sends
 * CKA_VALUE_LEN, which SoftHSM2 refuses): beside the one there (`add`), or instead of it (`replace`).
 * Named as the service names it (TOKEN_DES3_SECRET_KEY, handed over as JSON: numbers and booleans).
 */
function generateDes3ElsewhereUnder(label: string, how: 'add' | 'replace'): void {
  const script = `
    const p = require('pkcs11js');
    const [modulePath, tokenLabel, pin, label, how, keyTemplate] = process.argv.slice(1);
    const m = new p.PKCS11();
    m.load(modulePath);
    m.C_Initialize({ flags: p.CKF_OS_LOCKING_OK });
    const slot = m.C_GetSlotList(true).find((s) => m.C_GetTokenInfo(s).label.trim() === tokenLabel);
    const session = m.C_OpenSession(slot, p.CKF_SERIAL_SESSION | p.CKF_RW_SESSION);
    m.C_Login(session, p.CKU_USER, pin);
    const template = [...JSON.parse(keyTemplate), { type: p.CKA_LABEL, value: label }];
    if (how === 'replace') {
      m.C_FindObjectsInit(session, template);
      const found = m.C_FindObjects(session, 16);
      m.C_FindObjectsFinal(session);
      for (const key of found) m.C_DestroyObject(session, key);
    }
    m.C_GenerateKey(session, { mechanism: p.CKM_DES3_KEY_GEN }, [
      ...template, { type: p.CKA_PRIVATE, value: true }, { type: p.CKA_ENCRYPT, value: true },
    ]);
    m.C_Logout(session);
    m.C_Finalize();`;
  execFileSync(process.execPath, ['-e', script, token.modulePath, token.tokenLabel, token.pin, label, how, JSON.stringify(TOKEN_DES3_SECRET_KEY)], {
    env: { ...process.env, SOFTHSM2_CONF: join(token.options.directory, 'softhsm2.conf') },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
}

it('generates the key at first use, then encrypts whole blocks with it, the same each time', async () => {
  const block = Buffer.from('0123456789abcdef', 'hex');
  const first = await keyStore.encryptDes3(LABEL, block);
  expect(first).toHaveLength(8);
  expect(first.equals(block)).toBe(false);
  expect(await keyStore.encryptDes3(LABEL, block)).toEqual(first);
  const three = await keyStore.encryptDes3(LABEL, Buffer.concat([block, block, Buffer.alloc(8)]));
  expect(three).toHaveLength(24);
  expect(three.subarray(0, 8)).toEqual(first);
  expect(three.subarray(8, 16)).toEqual(first);
  const listed = listSecretKeys();
  expect(listed.match(/Secret Key Object/g)).toHaveLength(1);
  expect(listed).toMatch(/DES3/);
  expect(listed).toMatch(new RegExp(`label:\\s+${LABEL}`));
  expect(listed).toMatch(/Access:\s+.*sensitive/);
  expect(listed).toMatch(/never extractable/);
  expect(listed).toMatch(/Usage:\s+encrypt\s*$/m);
});

it('a key another process replaced: the next encryption uses the new key at once, staying ready', async () => {
  const label = 'REPLACED_MASTER_KEY';
  const block = Buffer.alloc(8, 1);
  const first = await keyStore.encryptDes3(label, block);
  // The sign thread holds the key it found; the module refuses its handle now, and the label is looked up again.
  generateDes3ElsewhereUnder(label, 'replace');
  const second = await keyStore.encryptDes3(label, block);
  expect(second).toHaveLength(8);
  expect(second.equals(first)).toBe(false);
  expect(await keyStore.encryptDes3(label, block)).toEqual(second);
  expect(hsm.isReady()).toBe(true);
});

it('refuses data that is not whole 8-byte blocks, and two keys under its label (KEY_UNUSABLE), staying ready', async () => {
  await expect(keyStore.encryptDes3(LABEL, Buffer.alloc(7))).rejects.toMatchObject({ code: 'KEY_UNUSABLE' });
  await expect(keyStore.encryptDes3(LABEL, Buffer.alloc(0))).rejects.toMatchObject({ code: 'KEY_UNUSABLE' });
  generateDes3ElsewhereUnder(LABEL, 'add');
  // The sign thread looks a held key's label up again once a second (KEY_RECHECK_MS), as the key store does for key pairs.
  await new Promise((resolve) => setTimeout(resolve, 1_100));
  await expect(keyStore.encryptDes3(LABEL, Buffer.alloc(8))).rejects.toMatchObject({
    code: 'KEY_UNUSABLE',
    message: expect.stringContaining('2 DES3 secret keys'),
  });
  expect(hsm.isReady()).toBe(true);
});
