import { HsmConfigurationError } from './hsm.errors';
import { Pkcs11Hsm, type HsmOptions } from './pkcs11-hsm';
import { Pkcs11Signer } from './pkcs11-signer.adapter';
import { createTemporarySoftHsmToken, type TemporarySoftHsmToken } from './testing/temporary-softhsm-token';
import { verifiesJws } from './testing/verify-jws';

// Each start-up mistake must stop the process with a message naming what is missing or wrong
// (DECISIONS.md §12), and must leave the module finalized so nothing leaks into the next connect.
let token: TemporarySoftHsmToken;
let options: HsmOptions;
let twinIds: string[];
let orphanId: string;

beforeAll(() => {
  token = createTemporarySoftHsmToken('config-spec');
  token.generateKey('GOOD', 'EC');
  twinIds = [token.generateKey('TWIN', 'EC').keyId, token.generateKey('TWIN', 'EC').keyId];
  token.generateKey('SMALL_RSA', 'RSA', 1024);
  token.pkcs11Tool('--keypairgen', '--key-type', 'EC:secp384r1', '--label', 'P384', '--id', '0384');
  // ORPHAN loses its public key; MISMATCHED gets another pair's public key under its CKA_ID.
  orphanId = token.generateKey('ORPHAN', 'EC').keyId;
  token.pkcs11Tool('--delete-object', '--type', 'pubkey', '--id', orphanId);
  const mismatchedId = token.generateKey('MISMATCHED', 'EC').keyId;
  const otherId = token.generateKey('OTHER', 'EC').keyId;
  token.pkcs11Tool('--delete-object', '--type', 'pubkey', '--id', mismatchedId);
  token.pkcs11Tool('--type', 'pubkey', '--id', otherId, '--set-id', mismatchedId);
  options = { modulePath: token.modulePath, tokenLabel: token.tokenLabel, pin: token.pin, keyLabel: 'GOOD' };
});

afterAll(() => token.remove());

async function refusal(overrides: Partial<HsmOptions>): Promise<HsmConfigurationError> {
  const error: unknown = await Pkcs11Hsm.connect({ ...options, ...overrides }).then(
    async (hsm) => {
      await hsm.close();
      throw new Error('connect succeeded');
    },
    (refused: unknown) => refused,
  );
  expect(error).toBeInstanceOf(HsmConfigurationError);
  return error as HsmConfigurationError;
}

it('names the path when the module file does not exist', async () => {
  const error = await refusal({ modulePath: '/opt/nowhere/libvendor-pkcs11.so' });
  expect(error.code).toBe('HSM_MODULE_NOT_FOUND');
  expect(error.message).toBe('PKCS#11 module file not found at path /opt/nowhere/libvendor-pkcs11.so');
});

it('names the module when the file is not a loadable PKCS#11 module', async () => {
  const error = await refusal({ modulePath: __filename });
  expect(error.code).toBe('HSM_MODULE_ERROR');
  expect(error.message).toBe(`PKCS#11 module ${__filename} failed at start-up: ${__filename}: invalid ELF header`);
});

it('names the token label and lists the labels present when no token has it', async () => {
  const error = await refusal({ tokenLabel: 'prod-signing' });
  expect(error.code).toBe('HSM_TOKEN_NOT_FOUND');
  expect(error.message).toBe(`no token labelled "prod-signing" in PKCS#11 module ${token.modulePath}; token labels present: "config-spec"`);
});

it('reports a wrong PIN once, without the PIN, and does not retry', async () => {
  const error = await refusal({ pin: '00000000' });
  expect(error.code).toBe('HSM_PIN_REJECTED');
  expect(error.message).toMatch(/^PIN rejected for token "config-spec" \(C_Login: CKR_PIN_INCORRECT\); not retrying/);
  expect(error.message).not.toContain('00000000');
});

it('names the key label and the token when no private key has the label', async () => {
  const error = await refusal({ keyLabel: 'JWT_KEY' });
  expect(error.code).toBe('HSM_KEY_NOT_FOUND');
  expect(error.message).toMatch(/^no private key labelled "JWT_KEY" on token "config-spec"; private keys present: /);
  expect(error.message).toContain('"GOOD"');
});

it('gives the CKA_IDs when more than one private key has the label (rule 6)', async () => {
  const error = await refusal({ keyLabel: 'TWIN' });
  expect(error.code).toBe('HSM_KEY_AMBIGUOUS');
  expect(error.message).toMatch(/^more than one private key labelled "TWIN" on token "config-spec" \(CKA_IDs /);
  for (const id of twinIds) {
    expect(error.message).toContain(id);
  }
});

it('refuses an RSA key shorter than 2048 bits', async () => {
  const error = await refusal({ keyLabel: 'SMALL_RSA' });
  expect(error.code).toBe('HSM_KEY_UNSUPPORTED');
  expect(error.message).toBe('key "SMALL_RSA" on token "config-spec" is a 1024-bit RSA key: key type not supported (EC P-256 or RSA >= 2048 only)');
});

it('refuses an EC key on another curve than P-256 as the token signer, naming the curve', async () => {
  const error = await refusal({ keyLabel: 'P384' });
  expect(error.code).toBe('HSM_KEY_UNSUPPORTED');
  expect(error.message).toBe('key "P384" on token "config-spec" is an EC key on curve OID 1.3.132.0.34: key type not supported (EC P-256 or RSA >= 2048 only)');
});

it('names the CKA_ID when the private key has no public key beside it', async () => {
  const error = await refusal({ keyLabel: 'ORPHAN' });
  expect(error.code).toBe('HSM_PUBLIC_KEY_NOT_FOUND');
  expect(error.message).toMatch(new RegExp(`^no public key with the private key's CKA_ID ${orphanId} on token "config-spec"`));
});

it("refuses a public key that does not verify the private key's signatures", async () => {
  const error = await refusal({ keyLabel: 'MISMATCHED' });
  expect(error.code).toBe('HSM_PUBLIC_KEY_MISMATCH');
  expect(error.message).toMatch(/^the public key with the CKA_ID of key "MISMATCHED" on token "config-spec" does not verify/);
});

it('refuses a session pool size that is not a positive integer', async () => {
  const error = await refusal({ sessionPoolSize: 0 });
  expect(error.code).toBe('HSM_OPTIONS_INVALID');
  expect(error.message).toBe('sessionPoolSize must be a positive integer, got 0');
});

it('refuses a health-check interval that is not a whole number of milliseconds', async () => {
  const error = await refusal({ healthCheckIntervalMs: -1 });
  expect(error.code).toBe('HSM_OPTIONS_INVALID');
  expect(error.message).toBe('healthCheckIntervalMs must be a whole number of milliseconds (0 turns checks off), got -1');
});

it('connects with the corrected configuration in the same process after all those refusals', async () => {
  const hsm = await Pkcs11Hsm.connect(options);
  const signer = new Pkcs11Signer(hsm);
  const input = Buffer.from('eyJhbGciOiJFUzI1NiJ9.e30');
  expect(signer.algorithm).toBe('ES256');
  expect(verifiesJws(signer.publicJwk, input, await signer.sign(input))).toBe(true);
  await hsm.close();
});
