import { AsyncLocalStorage } from 'node:async_hooks';

/** What the rest of a request's work may need to know about the request without it being passed down. */
export interface RequestContext {
  /** The request id, sent back as X-Correlation-ID and written into the request's audit events. */
  correlationId: string;
}

const storage = new AsyncLocalStorage<RequestContext>();

/**
 * Runs `next` (the rest of the request's lifecycle) inside the request's context. Installed once as
 * a Fastify onRequest hook (apps/api/src/app.setup.ts), the same pattern as @fastify/request-context.
 */
export function runInRequestContext(context: RequestContext, next: () => void): void {
  storage.run(context, next);
}

/** The current request's correlation id; undefined outside a request (bootstrap, command line, sweeps). */
export function currentCorrelationId(): string | undefined {
  return storage.getStore()?.correlationId;
}
