import { endianness } from 'node:os';
import * as pkcs11js from 'pkcs11js';
import { HsmConfigurationError } from './hsm.errors';
import type { HsmLogger } from './hsm.logger';

export type Handle = pkcs11js.Handle;

/** PKCS#11 v2.40; pkcs11js 2.1 names it only CKR_VENDOR_DEFINED:27. */
export const CKR_ACTION_PROHIBITED = 0x1b;

const PIN_REJECTED_CODES = new Set([
  pkcs11js.CKR_PIN_INCORRECT,
  pkcs11js.CKR_PIN_INVALID,
  pkcs11js.CKR_PIN_LEN_RANGE,
  pkcs11js.CKR_PIN_EXPIRED,
  pkcs11js.CKR_PIN_LOCKED,
]);

/** Where the token is and how to log in to it. */
export interface TokenSettings {
  modulePath: string;
  tokenLabel: string;
  pin: string;
}

/**
 * pkcs11.md rule 4: C_Initialize/C_Finalize are process-wide, so one owner of the PKCS#11 module
 * at a time in a process: the service's `Pkcs11Hsm`, or development provisioning before it.
 */
let moduleOwner: string | undefined;

export function claimModule(owner: string): void {
  if (moduleOwner !== undefined) {
    throw new HsmConfigurationError(
      'HSM_MODULE_IN_USE',
      `the PKCS#11 module is already owned in this process by ${moduleOwner}; close it before ${owner} connects (pkcs11.md rule 4)`,
    );
  }
  moduleOwner = owner;
}

export function releaseModule(): void {
  moduleOwner = undefined;
}

/** The first C_Initialize of the owner; the caller unloads the module (`close()`) when this throws. */
export function initialize(pkcs11: pkcs11js.PKCS11, modulePath: string): void {
  try {
    // Rule 1: without CKF_OS_LOCKING_OK, async calls corrupt the heap.
    pkcs11.C_Initialize({ flags: pkcs11js.CKF_OS_LOCKING_OK });
  } catch (error) {
    if (pkcs11ErrorCode(error) === pkcs11js.CKR_CRYPTOKI_ALREADY_INITIALIZED) {
      throw new HsmConfigurationError(
        'HSM_MODULE_IN_USE',
        `PKCS#11 module ${modulePath} is already initialized in this process, by other code or by an owner that was never closed (pkcs11.md rule 4)`,
        { cause: error },
      );
    }
    throw error;
  }
}

/**
 * C_Initialize for a module that may have lost its state: a healthy one answers
 * CKR_CRYPTOKI_ALREADY_INITIALIZED, which is fine (rule 1 flags either way).
 */
export function initializeAgain(pkcs11: pkcs11js.PKCS11): void {
  try {
    pkcs11.C_Initialize({ flags: pkcs11js.CKF_OS_LOCKING_OK });
  } catch (error) {
    if (pkcs11ErrorCode(error) !== pkcs11js.CKR_CRYPTOKI_ALREADY_INITIALIZED) {
      throw error;
    }
  }
}

/** The slot of the one token labelled `tokenLabel` (rule 6: slot ids are not stable; labels must be unique). */
export function findTokenSlot(pkcs11: pkcs11js.PKCS11, settings: TokenSettings): Handle {
  const tokens = pkcs11.C_GetSlotList(true).map((slot) => ({ slot, label: pkcs11.C_GetTokenInfo(slot).label.trim() }));
  const matches = tokens.filter((token) => token.label === settings.tokenLabel);
  if (matches.length > 1) {
    throw new HsmConfigurationError(
      'HSM_TOKEN_AMBIGUOUS',
      `${matches.length} tokens are labelled "${settings.tokenLabel}" in PKCS#11 module ${settings.modulePath}; token labels must be unique`,
    );
  }
  const [match] = matches;
  if (match === undefined) {
    const labels = tokens.map((token) => token.label).filter((label) => label !== '');
    throw new HsmConfigurationError(
      'HSM_TOKEN_NOT_FOUND',
      `no token labelled "${settings.tokenLabel}" in PKCS#11 module ${settings.modulePath}; token labels present: ${quoteList(labels)}`,
    );
  }
  return match.slot;
}

/** How long a start looks again for a token the module does not list. */
const START_LISTING_RETRY_MS = 1_000;

/**
 * `findTokenSlot` at start-up, before anything is open. SoftHSM2 rewrites a token's token.object
 * at every login, and a module initialized while another process does so leaves the token out;
 * so a missing token is looked for again for up to a second, the module initialized afresh each
 * time (nothing is open yet, so C_Finalize is safe, rule 4).
 */
export function findTokenSlotAtStart(pkcs11: pkcs11js.PKCS11, settings: TokenSettings): Handle {
  const deadline = Date.now() + START_LISTING_RETRY_MS;
  for (;;) {
    try {
      return findTokenSlot(pkcs11, settings);
    } catch (error) {
      if (!(error instanceof HsmConfigurationError && error.code === 'HSM_TOKEN_NOT_FOUND') || Date.now() > deadline) throw error;
      pkcs11.C_Finalize();
      sleepSync(20);
      pkcs11.C_Initialize({ flags: pkcs11js.CKF_OS_LOCKING_OK });
    }
  }
}

/** Blocks the thread: only for start-up and provisioning, which run before the service serves. */
export function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** Rule 5: a rejected PIN is HSM_PIN_REJECTED and must never be retried; an earlier login of this application counts. */
export function login(pkcs11: pkcs11js.PKCS11, session: Handle, settings: TokenSettings): void {
  try {
    pkcs11.C_Login(session, pkcs11js.CKU_USER, settings.pin);
  } catch (error) {
    if (pkcs11ErrorCode(error) === pkcs11js.CKR_USER_ALREADY_LOGGED_IN) {
      return;
    }
    if (error instanceof pkcs11js.Pkcs11Error && PIN_REJECTED_CODES.has(error.code)) {
      throw new HsmConfigurationError(
        'HSM_PIN_REJECTED',
        `PIN rejected for token "${settings.tokenLabel}" (C_Login: ${error.message}); not retrying, since HSMs lock the user after a few wrong PINs (pkcs11.md rule 5)`,
        { cause: error },
      );
    }
    throw error;
  }
}

export function findObjects(pkcs11: pkcs11js.PKCS11, session: Handle, template: pkcs11js.Template): Handle[] {
  pkcs11.C_FindObjectsInit(session, template);
  try {
    const found: Handle[] = [];
    for (let batch = pkcs11.C_FindObjects(session, 16); batch.length > 0; batch = pkcs11.C_FindObjects(session, 16)) {
      found.push(...batch);
    }
    return found;
  } finally {
    pkcs11.C_FindObjectsFinal(session);
  }
}

export function readAttributes(pkcs11: pkcs11js.PKCS11, session: Handle, object: Handle, types: number[]): Buffer[] {
  return pkcs11
    .C_GetAttributeValue(
      session,
      object,
      types.map((type) => ({ type })),
    )
    .map((attribute) => attribute.value);
}

/** CK_ULONG attribute values come back in the platform's byte order and width. */
export function readUlong(value: Buffer): number {
  const littleEndian = endianness() === 'LE';
  if (value.length === 8) {
    return Number(littleEndian ? value.readBigUInt64LE() : value.readBigUInt64BE());
  }
  return littleEndian ? value.readUInt32LE() : value.readUInt32BE();
}

export function pkcs11ErrorCode(error: unknown): number | undefined {
  if (error instanceof pkcs11js.Pkcs11Error) {
    return error.code;
  }
  // pkcs11js leaves some methods unwrapped (C_CopyObject): they throw the addon's plain Error, "CKR_NAME:code".
  const message = typeof error === 'object' && error !== null && 'message' in error ? String(error.message) : '';
  const match = /^CKR_\w+:(\d+)/.exec(message);
  return match ? Number(match[1]) : undefined;
}

export function describeError(error: unknown): string {
  if (error instanceof pkcs11js.NativeError && error.method !== '') {
    return `${error.method}: ${error.message}`;
  }
  // Not `instanceof Error`: the module's load errors come from another realm under Jest.
  return typeof error === 'object' && error !== null && 'message' in error ? String(error.message) : String(error);
}

/** Clean-up steps that must not stop the ones after them; a failure is only worth a warning. */
export function quietly(logger: HsmLogger | undefined, call: string, action: () => void): void {
  try {
    action();
  } catch (error) {
    logger?.warn({ call, error: describeError(error) }, 'PKCS#11 clean-up call failed');
  }
}

export function quoteList(values: string[]): string {
  return values.length === 0 ? 'none' : values.map((value) => `"${value}"`).join(', ');
}
