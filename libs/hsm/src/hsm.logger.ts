/** Pino-style: a message, or structured fields followed by a message. */
export type HsmLogFn = (objOrMsg: object | string, msg?: string) => void;

/** Where the HSM library logs connects, failures, reconnects and provisioning; never a PIN. */
export interface HsmLogger {
  info: HsmLogFn;
  warn: HsmLogFn;
  error: HsmLogFn;
}
