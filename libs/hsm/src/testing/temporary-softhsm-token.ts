import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runInThisContext } from 'node:vm';
import { ensureSoftHsmToken, generateSoftHsmKey, type SoftHsmKeyOptions } from '../softhsm-provisioning';

export interface TemporarySoftHsmToken {
  readonly modulePath: string;
  readonly tokenLabel: string;
  readonly pin: string;
  generateKey(keyLabel: string, keyType: SoftHsmKeyOptions['keyType'], rsaBits?: number): { keyId: string };
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
  return {
    modulePath,
    tokenLabel,
    pin: tokenOptions.pin,
    generateKey: (keyLabel, keyType, rsaBits) => generateSoftHsmKey({ ...tokenOptions, keyLabel, keyType, rsaBits }),
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
