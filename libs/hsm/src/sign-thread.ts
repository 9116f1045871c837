import { Worker } from 'node:worker_threads';
import * as pkcs11js from 'pkcs11js';
import { TOKEN_DES3_SECRET_KEY } from './pkcs11-keys';
import type { Handle } from './pkcs11-token';

/** One sign as the thread runs it: C_SignInit then C_Sign on a session that is this sign's alone (rule 2). */
export interface SignCall {
  readonly session: Handle;
  readonly key: Handle;
  readonly mechanism: number;
  /** What C_Sign signs: the digest for CKM_ECDSA (rule 7), the message for the RSA mechanisms. */
  readonly input: Buffer;
  readonly outputLength: number;
  /** C_SignAsync on a native worker (P-384 and RSA, slower than the message hop); else C_Sign. */
  readonly native: boolean;
  /** A token object to read CKA_ID of first, on the same session: is the key still in the token? */
  readonly checkObject?: Handle;
}

/**
 * One DES3 encryption as the thread runs it, on a session that is this call's alone (rule 2): the
 * token's one DES3 secret key under `label` (found once, then held; see the thread's `des3Key`),
 * C_EncryptInit (CKM_DES3_ECB) and C_Encrypt of `input` (whole 8-byte blocks).
 */
export interface Des3EncryptCall {
  readonly session: Handle;
  readonly label: string;
  readonly input: Buffer;
}

/**
 * The token holds `count` DES3 secret keys under an encryption's label, not one. Not a module
 * failure: the owner resolves it (generates the first key, refuses two).
 */
export class Des3KeyCountError extends Error {
  constructor(readonly count: number) {
    super(`the token holds ${count} DES3 secret keys under the label, not one`);
  }
}

interface Pending {
  resolve(signature: Buffer): void;
  reject(error: Error): void;
}

/**
 * [id, signature or ciphertext] | [id, null, error] | [id, null, null] (skipped) | [id, null,
 * {keysUnderLabel}] (a DES3 encryption that found no key or several): arrays clone faster than objects.
 */
type Reply = [number, Uint8Array | null, { message: string; code?: number; method?: string; keysUnderLabel?: number } | null | undefined];

/**
 * A call as the thread receives it: a sign [id, session, key, mechanism, input, outputLength, native,
 * checkObject], or a DES3 encryption [id, session, 0n, mechanism, input, outputLength, false, undefined, label].
 */
type QueuedCall = [number, bigint, bigint, number, Uint8Array, number, boolean, bigint | undefined, string?];

/**
 * Runs every sign's module calls, and every DES3 encryption's (card administration keys, DECISIONS
 * 17.1), on one worker thread, never on the event loop: C_SignInit has no asynchronous form in
 * pkcs11js, and an HSM's client library may block in it for seconds while its HSM is away (issue
 * 34: a module that blocked 3.5 s per failing call held the event loop 7 s, and /health/live with
 * it). Worker threads share the process's PKCS#11 state (pkcs11.md rule 9): the session and key
 * handles are the owner's. Once a module call fails (any failure other than a key gone from the
 * token, which the owner looks up again), the thread answers every call already queued without
 * calling the module until `resume()`, which the owner sends once it has connected again: the calls
 * accepted before the owner learnt of the failure do not each wait out the module.
 */
export class SignThread {
  private worker?: Worker;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  /** Signs not yet sent to the thread (see send()). */
  private queued: QueuedCall[] = [];

  constructor(
    private readonly modulePath: string,
    private readonly keyGoneCodes: ReadonlySet<number>,
    /** How long the thread uses a DES3 key it found before it looks the label up again. */
    private readonly keyRecheckMs: number,
  ) {}

  /** Starts the thread now, so that the first sign does not wait for it to load. */
  start(): void {
    this.worker ??= this.spawn();
  }

  sign(call: SignCall): Promise<Buffer> {
    // Handles as numbers and a copy of the input of its own length: the clone of a Buffer carries its
    // whole backing store, and Node lends small Buffers slices of an 8 KiB pool.
    return this.enqueue((id) => [
      id,
      call.session.readBigUInt64LE(),
      call.key.readBigUInt64LE(),
      call.mechanism,
      new Uint8Array(call.input),
      call.outputLength,
      call.native,
      call.checkObject?.readBigUInt64LE(),
    ]);
  }

  /**
   * The ciphertext of a DES3 encryption (see Des3EncryptCall); Des3KeyCountError when the token holds
   * no DES3 key under the label, or several. The module calls run here for the same reason as a
   * sign's: a card issuance must not hold the event loop while the HSM is away.
   */
  encryptDes3(call: Des3EncryptCall): Promise<Buffer> {
    return this.enqueue((id) => [
      id,
      call.session.readBigUInt64LE(),
      0n,
      pkcs11js.CKM_DES3_ECB,
      new Uint8Array(call.input),
      call.input.length,
      false,
      undefined,
      call.label,
    ]);
  }

  private enqueue(queuedCall: (id: number) => QueuedCall): Promise<Buffer> {
    const worker = (this.worker ??= this.spawn());
    const id = this.nextId++;
    // Referenced only while a call is in flight: an idle thread never keeps the process alive.
    if (this.pending.size === 0) worker.ref();
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      if (this.queued.length === 0) setImmediate(() => this.send());
      this.queued.push(queuedCall(id));
    });
  }

  /**
   * The signs asked for during one turn of the event loop go to the thread as one message, and their
   * signatures come back as one (issue 35): each message costs both threads a wake-up, which cost
   * more CPU than a P-256 signature itself (docs/performance.md). A thread lost meanwhile has
   * rejected them already.
   */
  private send(): void {
    const calls = this.queued;
    this.queued = [];
    this.worker?.postMessage(calls);
  }

  /**
   * The owner connected again: the thread calls the module for the signs that come from now on, and
   * forgets the DES3 keys it held (their handles were the old connection's).
   */
  resume(): void {
    this.worker?.postMessage('resume');
  }

  /** Ends the thread once nothing is in flight (the owner drains first, rule 4); the module stays loaded. */
  async stop(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    await worker?.terminate();
  }

  private spawn(): Worker {
    const worker = new Worker(SIGN_SOURCE, {
      eval: true,
      workerData: {
        pkcs11js: require.resolve('pkcs11js'),
        modulePath: this.modulePath,
        keyGoneCodes: [...this.keyGoneCodes],
        keyRecheckMs: this.keyRecheckMs,
        des3KeyTemplate: TOKEN_DES3_SECRET_KEY,
      },
    });
    worker.unref();
    worker.on('message', (replies: Reply[]) => replies.forEach((reply) => this.settle(reply)));
    const lost = (reason: string) => {
      if (this.worker === worker) this.worker = undefined;
      for (const [id, { reject }] of this.pending) {
        this.pending.delete(id);
        reject(new Error(`the PKCS#11 sign thread ${reason}`));
      }
    };
    worker.on('error', (error) => lost(`failed: ${error.message}`));
    worker.on('exit', (code) => lost(`exited with code ${code}`));
    return worker;
  }

  private settle([id, signature, error]: Reply): void {
    const pending = this.pending.get(id);
    if (pending === undefined) return;
    this.pending.delete(id);
    if (this.pending.size === 0) this.worker?.unref();
    if (signature !== null) {
      pending.resolve(Buffer.from(signature.buffer, signature.byteOffset, signature.byteLength));
    } else if (error === null) {
      pending.reject(new Error('not sent to the PKCS#11 module: a call queued before it failed did'));
    } else if (error?.keysUnderLabel !== undefined) {
      pending.reject(new Des3KeyCountError(error.keysUnderLabel));
    } else {
      const { message = 'unknown error', code, method = '' } = error ?? {};
      pending.reject(code === undefined ? new Error(method === '' ? message : `${method}: ${message}`) : new pkcs11js.Pkcs11Error(message, code, method));
    }
  }
}

// Plain JavaScript: a worker runs outside the TypeScript build (and outside Jest's transform).
const SIGN_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const pkcs11js = require(workerData.pkcs11js);
const pkcs11 = new pkcs11js.PKCS11();
pkcs11.load(workerData.modulePath);
const keyGone = new Set(workerData.keyGoneCodes);
const handle = (value) => {
  const buffer = Buffer.alloc(8);
  buffer.writeBigUInt64LE(value);
  return buffer;
};
// Rule 3: a native sign reads the input and writes the output off this thread; both stay referenced until it settles.
const inNativeUse = new Set();
let failed = false;
// Replies go back together: one message per batch of signs that ran here (a native sign replies alone, when it settles).
const failure = (id, error) => {
  const code = error instanceof pkcs11js.Pkcs11Error ? error.code : undefined;
  if (!keyGone.has(code)) failed = true;
  return [id, null, { message: String(error && error.message), code, method: error && error.method }];
};
// The token's DES3 secret keys under a label (the owner's TOKEN_DES3_SECRET_KEY, pkcs11.md rule 6).
const findDes3Keys = (session, label) => {
  pkcs11.C_FindObjectsInit(session, [...workerData.des3KeyTemplate, { type: pkcs11js.CKA_LABEL, value: label }]);
  try {
    const found = [];
    for (let batch = pkcs11.C_FindObjects(session, 16); batch.length > 0; batch = pkcs11.C_FindObjects(session, 16)) found.push(...batch);
    return found;
  } finally {
    pkcs11.C_FindObjectsFinal(session);
  }
};
// The DES3 key found under each label, held: SoftHSM2 reads every object of the token at each find
// (161 µs with 10 objects, 1.1 ms with 82), and every smart card's issuance encrypts. Looked up again
// once keyRecheckMs has passed (another process may have added a second key: exactly one is insisted
// on) and when the module refuses the handle (another process destroyed the key). Forgotten on
// 'resume', which follows every reconnect.
const des3Keys = new Map();
// The key's handle, or how many keys the token holds under the label when that is not one.
const des3Key = (session, label, lookUpAgain) => {
  const held = des3Keys.get(label);
  if (!lookUpAgain && held !== undefined && Date.now() - held.foundAt < workerData.keyRecheckMs) return held.handle;
  des3Keys.delete(label);
  const keys = findDes3Keys(session, label);
  if (keys.length !== 1) return keys.length;
  des3Keys.set(label, { handle: keys[0], foundAt: Date.now() });
  return keys[0];
};
const keyGoneError = (error) => error instanceof pkcs11js.Pkcs11Error && keyGone.has(error.code);
// A ciphertext (a card's administration key) leaves by transfer, so no copy of it stays on this thread.
const encryptDes3 = (id, session, mechanism, data, outputLength, label, replies, transfers) => {
  let key = des3Key(session, label, false);
  if (typeof key !== 'number') {
    try {
      pkcs11.C_EncryptInit(session, { mechanism }, key);
    } catch (error) {
      if (!keyGoneError(error)) throw error;
      // Destroyed by another process since it was found: look the label up again, once.
      key = des3Key(session, label, true);
      if (typeof key !== 'number') pkcs11.C_EncryptInit(session, { mechanism }, key);
    }
  }
  if (typeof key === 'number') {
    replies.push([id, null, { keysUnderLabel: key }]);
    return;
  }
  const output = Buffer.alloc(outputLength);
  const ciphertext = pkcs11.C_Encrypt(session, data, output);
  replies.push([id, ciphertext]);
  transfers.push(output.buffer);
};
const run = (call, replies, transfers) => {
  const [id, session, key, mechanism, input, outputLength, native, checkObject, des3Label] = call;
  if (failed) {
    replies.push([id, null, null]);
    return;
  }
  try {
    const sessionHandle = handle(session);
    if (des3Label !== undefined) {
      encryptDes3(id, sessionHandle, mechanism, Buffer.from(input.buffer, input.byteOffset, input.byteLength), outputLength, des3Label, replies, transfers);
      return;
    }
    if (checkObject !== undefined) pkcs11.C_GetAttributeValue(sessionHandle, handle(checkObject), [{ type: pkcs11js.CKA_ID }]);
    pkcs11.C_SignInit(sessionHandle, { mechanism }, handle(key));
    const data = Buffer.from(input.buffer, input.byteOffset, input.byteLength);
    const output = Buffer.alloc(outputLength);
    if (!native) {
      replies.push([id, pkcs11.C_Sign(sessionHandle, data, output)]);
      return;
    }
    const held = [data, output];
    inNativeUse.add(held);
    pkcs11.C_SignAsync(sessionHandle, data, output)
      .then((signature) => parentPort.postMessage([[id, signature]]), (error) => parentPort.postMessage([failure(id, error)]))
      .finally(() => inNativeUse.delete(held));
  } catch (error) {
    replies.push(failure(id, error));
  }
};
parentPort.on('message', (calls) => {
  if (calls === 'resume') {
    failed = false;
    des3Keys.clear();
    return;
  }
  const replies = [];
  const transfers = [];
  for (const call of calls) run(call, replies, transfers);
  if (replies.length > 0) parentPort.postMessage(replies, transfers);
});
`;
