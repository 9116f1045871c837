/**
 * The database cannot be reached (refused, reset, shut down, timed out): a 503 with Retry-After in
 * the route family's format (DECISIONS 12 for the HSM, the same for the database), never a 500 with
 * a stack trace per request. The pool reconnects on the next use; nothing restarts.
 */
export class DatabaseUnavailableError extends Error {
  override readonly name = 'DatabaseUnavailableError';
  readonly retryAfterSeconds = 2;

  constructor(readonly reason: string) {
    super(`The database is unavailable (${reason}).`);
  }
}

/** Socket-level failures of the connection to PostgreSQL. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);

/** SQLSTATEs of a server that is going away or not accepting connections (class 08 and 57P01-57P03). */
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300']);

/** What pg says when a connection dies under it or cannot be had in time. */
const PG_MESSAGES = [
  /^Connection terminated/,
  /timeout exceeded when trying to connect/,
  /Client has encountered a connection error/,
  /Connection ended unexpectedly/,
];

/** Why `error` means the database is unreachable, or undefined when it is an ordinary query error. */
export function connectionFailureOf(error: unknown): string | undefined {
  if (error instanceof DatabaseUnavailableError) return error.reason;
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (typeof code === 'string' && (NETWORK_CODES.has(code) || UNAVAILABLE_SQLSTATES.has(code) || code.startsWith('08'))) return code;
  if (typeof message === 'string' && PG_MESSAGES.some((pattern) => pattern.test(message))) return message.split('\n')[0].slice(0, 80);
  return undefined;
}
