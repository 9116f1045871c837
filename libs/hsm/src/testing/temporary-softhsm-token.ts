import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runInThisContext } from 'node:vm';
import { ensureSoftHsmToken, generateSoftHsmKey, type SoftHsmKeyOptions, type SoftHsmTokenOptions } from '../softhsm-provisioning';

/** A key pair's objects as a separate process sees them (`inspectKey`). */
export interface InspectedKey {
  /** Objects under the label that a session without login finds: private objects are hidden. */
  visibleWithoutLogin: number;
  privateKeys: Array<{ id: string; token: boolean; private: boolean; sensitive: boolean; extractable: boolean; sign: boolean }>;
  publicKeys: Array<{ id: string; token: boolean }>;
}

export interface TemporarySoftHsmToken {
  readonly modulePath: string;
  readonly tokenLabel: string;
  readonly pin: string;
  /** What the provisioning functions take for this token. */
  readonly options: SoftHsmTokenOptions;
  /** `<directory>/tokens`, where SoftHSM2 keeps one folder per token. */
  readonly tokenDirectory: string;
  /** The folder of this token under `tokenDirectory`. */
  tokenFolder(): string;
  /** Reads the key pair under `label` with pkcs11js in a child process, as another service process would. */
  inspectKey(label: string): InspectedKey;
  generateKey(keyLabel: string, keyType: SoftHsmKeyOptions['keyType'], rsaBits?: number): { keyId: string };
  /**
   * An EC P-256 key pair whose private key has CKA_COPYABLE false, as an HSM policy may set it
   * (pkcs11-tool cannot), made by pkcs11js in a child process for the reason `generateSoftHsmKey` gives.
   */
  generateUncopyableEcKey(keyLabel: string): void;
  /** Runs OpenSC's pkcs11-tool logged in to this token, in a child process, e.g. to change the PIN or edit objects. */
  pkcs11Tool(...args: string[]): void;
  /** Restores SOFTHSM2_CONF and deletes the folder; call it after the last signer is closed. */
  remove(): void;
}

/**
 * A fresh SoftHSM2 token in a temporary folder, for one spec file.
 *
 * Jest gives each test file a copy of `process.env` that native code never reads
 * (jest-util `createProcessEnv`), while SoftHSM reads SOFTHSM2_CONF with getenv at C_Initialize
 * (pkcs11.md rule 8). So the variable is also set on the real process, reached through the
 * main context, and restored by `remove()` for the spec files that run after this one.
 */
export function createTemporarySoftHsmToken(tokenLabel: string): TemporarySoftHsmToken {
  const directory = mkdtempSync(join(tmpdir(), 'hsm-spec-'));
  const tokenOptions = { directory, tokenLabel, soPin: '12345678', pin: '87654321' };
  const { modulePath, configPath } = ensureSoftHsmToken(tokenOptions);
  const realEnv = (runInThisContext('process') as NodeJS.Process).env;
  const previousConfig = realEnv.SOFTHSM2_CONF;
  realEnv.SOFTHSM2_CONF = configPath;
  const tokenDirectory = join(directory, 'tokens');
  return {
    modulePath,
    tokenLabel,
    pin: tokenOptions.pin,
    options: tokenOptions,
    tokenDirectory,
    tokenFolder() {
      const [folder, ...others] = readdirSync(tokenDirectory);
      if (folder === undefined || others.length > 0) throw new Error(`expected one token folder in ${tokenDirectory}`);
      return folder;
    },
    inspectKey(label) {
      const output = execFileSync(process.execPath, ['-e', INSPECT_KEY, modulePath, tokenLabel, tokenOptions.pin, label], {
        env: { ...process.env, SOFTHSM2_CONF: configPath },
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      return JSON.parse(output) as InspectedKey;
    },
    generateKey: (keyLabel, keyType, rsaBits) => generateSoftHsmKey({ ...tokenOptions, keyLabel, keyType, rsaBits }),
    generateUncopyableEcKey(keyLabel) {
      execFileSync(process.execPath, ['-e', GENERATE_UNCOPYABLE_EC_KEY, modulePath, tokenLabel, tokenOptions.pin, keyLabel], {
        env: { ...process.env, SOFTHSM2_CONF: configPath },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
    },
    pkcs11Tool(...args) {
      execFileSync('pkcs11-tool', ['--module', modulePath, '--token-label', tokenLabel, '--login', '--pin', tokenOptions.pin, ...args], {
        env: { ...process.env, SOFTHSM2_CONF: configPath },
        stdio: 'ignore',
      });
    },
    remove() {
      if (previousConfig === undefined) {
        delete realEnv.SOFTHSM2_CONF;
      } else {
        realEnv.SOFTHSM2_CONF = previousConfig;
      }
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

const GENERATE_UNCOPYABLE_EC_KEY = `
const pkcs11js = require(${JSON.stringify(require.resolve('pkcs11js'))});
const [modulePath, tokenLabel, pin, keyLabel] = process.argv.slice(1);
const pkcs11 = new pkcs11js.PKCS11();
pkcs11.load(modulePath);
pkcs11.C_Initialize({ flags: pkcs11js.CKF_OS_LOCKING_OK });
try {
  const slot = pkcs11.C_GetSlotList(true).find((s) => pkcs11.C_GetTokenInfo(s).label.trim() === tokenLabel);
  const session = pkcs11.C_OpenSession(slot, pkcs11js.CKF_SERIAL_SESSION | pkcs11js.CKF_RW_SESSION);
  pkcs11.C_Login(session, pkcs11js.CKU_USER, pin);
  const id = require('node:crypto').randomBytes(16);
  const common = [
    { type: pkcs11js.CKA_TOKEN, value: true },
    { type: pkcs11js.CKA_LABEL, value: keyLabel },
    { type: pkcs11js.CKA_ID, value: id },
  ];
  pkcs11.C_GenerateKeyPair(
    session,
    { mechanism: pkcs11js.CKM_EC_KEY_PAIR_GEN },
    [...common, { type: pkcs11js.CKA_EC_PARAMS, value: Buffer.from('06082a8648ce3d030107', 'hex') }, { type: pkcs11js.CKA_VERIFY, value: true }],
    [...common, { type: pkcs11js.CKA_PRIVATE, value: true }, { type: pkcs11js.CKA_SENSITIVE, value: true }, { type: pkcs11js.CKA_SIGN, value: true }, { type: pkcs11js.CKA_COPYABLE, value: false }],
  );
  pkcs11.C_Logout(session);
  pkcs11.C_CloseAllSessions(slot);
} finally {
  pkcs11.C_Finalize();
}
`;

const INSPECT_KEY = `
const pkcs11js = require(${JSON.stringify(require.resolve('pkcs11js'))});
const [modulePath, tokenLabel, pin, label] = process.argv.slice(1);
const pkcs11 = new pkcs11js.PKCS11();
pkcs11.load(modulePath);
pkcs11.C_Initialize({ flags: pkcs11js.CKF_OS_LOCKING_OK });
try {
  const slot = pkcs11.C_GetSlotList(true).find((s) => pkcs11.C_GetTokenInfo(s).label.trim() === tokenLabel);
  const session = pkcs11.C_OpenSession(slot, pkcs11js.CKF_SERIAL_SESSION);
  const find = (template) => {
    pkcs11.C_FindObjectsInit(session, template);
    const found = pkcs11.C_FindObjects(session, 100);
    pkcs11.C_FindObjectsFinal(session);
    return found;
  };
  const byLabel = [{ type: pkcs11js.CKA_LABEL, value: label }];
  const visibleWithoutLogin = find(byLabel).length;
  pkcs11.C_Login(session, pkcs11js.CKU_USER, pin);
  const bool = (value) => value.length > 0 && value[0] !== 0;
  const read = (object, types) => pkcs11.C_GetAttributeValue(session, object, types.map((type) => ({ type }))).map((a) => a.value);
  const privateKeys = find([...byLabel, { type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_PRIVATE_KEY }]).map((key) => {
    const [id, token, priv, sensitive, extractable, sign] = read(key, [pkcs11js.CKA_ID, pkcs11js.CKA_TOKEN, pkcs11js.CKA_PRIVATE, pkcs11js.CKA_SENSITIVE, pkcs11js.CKA_EXTRACTABLE, pkcs11js.CKA_SIGN]);
    return { id: id.toString('hex'), token: bool(token), private: bool(priv), sensitive: bool(sensitive), extractable: bool(extractable), sign: bool(sign) };
  });
  const publicKeys = find([...byLabel, { type: pkcs11js.CKA_CLASS, value: pkcs11js.CKO_PUBLIC_KEY }]).map((key) => {
    const [id, token] = read(key, [pkcs11js.CKA_ID, pkcs11js.CKA_TOKEN]);
    return { id: id.toString('hex'), token: bool(token) };
  });
  process.stdout.write(JSON.stringify({ visibleWithoutLogin, privateKeys, publicKeys }));
  pkcs11.C_Logout(session);
  pkcs11.C_CloseAllSessions(slot);
} finally {
  pkcs11.C_Finalize();
}
`;
