import { Worker } from 'node:worker_threads';
import type { Handle, TokenSettings } from './pkcs11-token';

/**
 * Looks for the token on a worker thread, never on the event loop: while its HSM is unreachable, a
 * network HSM's client library may block in every call, and routes that need no HSM must not wait
 * for it (docs/decisions.md, "HSM"). Worker threads share the process's PKCS#11 state (pkcs11.md
 * rule 9), so the worker's C_Initialize and C_Finalize are the owner's: once the worker finds the
 * token, the owner's own calls work again. One probe at a time, and only while the owner has
 * nothing in flight (rule 4).
 */
export class TokenProbe {
  private worker?: Worker;
  private pending?: (absence: string | undefined) => void;

  constructor(private readonly settings: TokenSettings) {}

  /**
   * Undefined when the module lists the token, else why not; a module that does not list it is
   * finalized, so that the next probe's C_Initialize reads the token list afresh (SoftHSM2 reads
   * its token folder only then, rule 8). `closeSessionsOf`: first close that slot's sessions.
   */
  find(closeSessionsOf?: Handle): Promise<string | undefined> {
    const worker = this.worker ?? this.start();
    return new Promise((resolve) => {
      this.pending = resolve;
      worker.postMessage({ closeSessionsOf });
    });
  }

  /** Ends the worker thread; the module stays loaded and initialized for its owner. */
  async stop(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    await worker?.terminate();
  }

  private start(): Worker {
    const { modulePath, tokenLabel } = this.settings;
    const worker = new Worker(PROBE_SOURCE, { eval: true, workerData: { pkcs11js: require.resolve('pkcs11js'), modulePath, tokenLabel } });
    worker.unref();
    worker.on('message', (absence: string | null) => this.settle(absence ?? undefined));
    worker.on('error', (error) => {
      this.worker = undefined;
      this.settle(`the probe thread failed: ${error.message}`);
    });
    this.worker = worker;
    return worker;
  }

  private settle(absence: string | undefined): void {
    const pending = this.pending;
    this.pending = undefined;
    pending?.(absence);
  }
}

// Plain JavaScript: a worker runs outside the TypeScript build (and outside Jest's transform).
const PROBE_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const pkcs11js = require(workerData.pkcs11js);
const pkcs11 = new pkcs11js.PKCS11();
pkcs11.load(workerData.modulePath);
const describe = (error) => (error && error.method ? error.method + ': ' : '') + (error && error.message ? error.message : String(error));
parentPort.on('message', ({ closeSessionsOf }) => {
  if (closeSessionsOf) {
    try {
      pkcs11.C_CloseAllSessions(Buffer.from(closeSessionsOf));
    } catch {
      // The sessions are gone with the module's state, or the HSM: nothing left to close.
    }
  }
  try {
    try {
      // pkcs11.md rule 1; a module that kept its state answers CKR_CRYPTOKI_ALREADY_INITIALIZED.
      pkcs11.C_Initialize({ flags: pkcs11js.CKF_OS_LOCKING_OK });
    } catch (error) {
      if (error.code !== pkcs11js.CKR_CRYPTOKI_ALREADY_INITIALIZED) throw error;
    }
    const labels = pkcs11.C_GetSlotList(true).map((slot) => pkcs11.C_GetTokenInfo(slot).label.trim());
    if (labels.includes(workerData.tokenLabel)) {
      parentPort.postMessage(null);
      return;
    }
    throw new Error('no token labelled "' + workerData.tokenLabel + '" in PKCS#11 module ' + workerData.modulePath);
  } catch (error) {
    try {
      pkcs11.C_Finalize();
    } catch {
      // Not initialized: nothing to finalize.
    }
    parentPort.postMessage(describe(error));
  }
});
`;
