import { existsSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import * as pkcs11js from 'pkcs11js';

/** The module and token an HSM owner uses (`Pkcs11Hsm` has both). */
export interface HsmUnderTest {
  readonly modulePath: string;
  readonly tokenLabel: string;
}

/**
 * Breaks the PKCS#11 module behind its owner's back, through a second pkcs11js handle on the same
 * library (the module's state is process-wide, pkcs11.md rule 4): `sessions-closed` is what an HSM
 * restart or a dropped link does (the next call meets CKR_SESSION_HANDLE_INVALID);
 * `module-finalized` is a module that lost its state (CKR_CRYPTOKI_NOT_INITIALIZED) and makes the
 * reconnect read the token afresh. Call it with no sign in flight (rules 2 and 4).
 */
export function simulateModuleFailure(hsm: HsmUnderTest, failure: 'sessions-closed' | 'module-finalized' = 'sessions-closed'): void {
  const pkcs11 = new pkcs11js.PKCS11();
  pkcs11.load(hsm.modulePath);
  if (failure === 'module-finalized') {
    pkcs11.C_Finalize();
    return;
  }
  const slot = pkcs11.C_GetSlotList(true).find((candidate) => pkcs11.C_GetTokenInfo(candidate).label.trim() === hsm.tokenLabel);
  if (slot === undefined) throw new Error(`simulateModuleFailure: no token labelled "${hsm.tokenLabel}"`);
  pkcs11.C_CloseAllSessions(slot);
}

/**
 * A SoftHSM2 token that is gone until `restore()`: its folder is moved out of the token folder and
 * the module loses its state, so the owner's reconnect finds no token until the folder is back.
 * `restore()` again does nothing (a test's clean-up may call it after the test did).
 */
export function takeSoftHsmTokenAway(hsm: HsmUnderTest, tokenDirectory: string, tokenFolder: string): { restore(): void } {
  const aside = join(tokenDirectory, '..', `${tokenFolder}.away`);
  renameSync(join(tokenDirectory, tokenFolder), aside);
  simulateModuleFailure(hsm, 'module-finalized');
  return {
    restore: () => {
      if (existsSync(aside)) renameSync(aside, join(tokenDirectory, tokenFolder));
    },
  };
}
