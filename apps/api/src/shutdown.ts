/**
 * Whether this process is shutting down (SIGTERM/SIGINT received). Set first, before the server
 * stops accepting: readiness turns red at once, and a request that still arrives (on a kept-alive
 * connection) gets a 503 in its route family's format instead of Fastify's own answer.
 */
export class ShutdownState {
  closing = false;
}

/** The answer to a request that arrives while the process shuts down. */
export class ServiceClosingError extends Error {
  override readonly name = 'ServiceClosingError';
  readonly retryAfterSeconds = 1;

  constructor() {
    super('This instance is shutting down; retry, another instance will answer.');
  }
}
