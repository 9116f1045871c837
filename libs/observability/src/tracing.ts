/* eslint-disable @typescript-eslint/no-require-imports -- OpenTelemetry is loaded only when tracing is on (DECISIONS 13.x "Traces"). */
import type * as OtelApi from '@opentelemetry/api';

/**
 * OpenTelemetry traces (issue 36 item 4; DECISIONS 13.2): off unless OTEL_EXPORTER_OTLP_ENDPOINT is
 * set, and then nothing of OpenTelemetry is even loaded: every helper here is one `undefined` check.
 * When on, `startTracing` runs first thing in the process (apps/api/src/tracing.ts, imported before
 * Nest, pg and the HTTP server), so that the HTTP and pg instrumentations patch those modules as they
 * load. Spans: each HTTP request (named by its route template), each SQL statement (statement text
 * with its placeholders, never a parameter value), each HSM call (`traced`), each outbound push.
 * No attribute carries a secret, a token or personal data: the span processor of `startTracing` (rules: `redactAttributes`) removes or cuts
 * what the instrumentations record (query strings, raw paths, addresses, user agents, headers).
 */

/** The API, once tracing has started in this process; undefined while it is off. */
let api: typeof OtelApi | undefined;

/** The attribute that carries the request's correlation id (the X-Correlation-ID its logs and audit events carry). */
export const CORRELATION_ID_ATTRIBUTE = 'app.correlation_id';

export function tracingEnabled(): boolean {
  return api !== undefined;
}

/**
 * Runs `work` in a span of its own (a child of the request's), ended when it settles. Off: `work()`
 * itself, no extra tick. The span records the error's class name on failure, never its message (a
 * driver's message may quote input).
 */
export function traced<T>(name: string, attributes: Record<string, string | number | boolean>, work: () => Promise<T>): Promise<T> {
  if (!api) return work();
  const otel = api;
  return otel.trace.getTracer('credential-platform').startActiveSpan(name, { kind: otel.SpanKind.CLIENT, attributes }, (span) =>
    work().then(
      (result) => {
        span.end();
        return result;
      },
      (error: unknown) => {
        span.setStatus({ code: otel.SpanStatusCode.ERROR, message: (error as Error)?.name ?? 'Error' });
        span.end();
        throw error;
      },
    ),
  );
}

/**
 * Names the HTTP server span of the current request by its route template (`POST
 * /authentication/customer/:org/token`, never the raw path, which may carry a user name) and adds its
 * correlation id. Called from the application's onRequest hook; off: nothing.
 */
export function annotateRequest(method: string, routeTemplate: string | undefined, correlationId: string): void {
  if (!api) return;
  const span = api.trace.getActiveSpan();
  if (!span) return;
  const route = routeTemplate ?? '(no route)';
  span.updateName(`${method} ${route}`);
  span.setAttribute('http.route', route);
  span.setAttribute(CORRELATION_ID_ATTRIBUTE, correlationId);
}

/** Adds the correlation id to the current span (an outbound push, whose notification carries the id of the request that queued it). */
export function annotateCorrelation(correlationId: string | null | undefined): void {
  if (!api || !correlationId) return;
  api.trace.getActiveSpan()?.setAttribute(CORRELATION_ID_ATTRIBUTE, correlationId);
}

/**
 * Attributes that never leave the process: addresses and names of people and machines talking to the
 * service (personal data under the GDPR), user agents, database users and connection strings, headers.
 */
const DROPPED = [
  /^client\./,
  /^net\.peer\.ip$/,
  /^net\.sock\./,
  /^network\.peer\./,
  /^network\.local\./,
  /^net\.host\.ip$/,
  /^http\.client_ip$/,
  /^user_agent\./,
  /^http\.user_agent$/,
  /^http\.request\.header\./,
  /^http\.response\.header\./,
  /^enduser\./,
  /^db\.user$/,
  /^db\.connection_string$/,
  /^db\.query\.parameter\./,
  /^db\.postgresql\.values$/,
  /^db\.postgresql\.parameters$/,
  /^exception\./,
];

/** Attributes that hold a URL or a path: cut to what names no one (the route template, or the origin). */
const URL_ATTRIBUTES = ['http.url', 'url.full', 'http.target', 'url.path', 'url.query', 'http.host', 'url.original'];

/** What the span processor of `startTracing` does to one span's (or span event's) attributes before export; `server`: an incoming request's span. */
export function redactAttributes(attributes: Record<string, unknown>, server: boolean): void {
  for (const key of Object.keys(attributes)) {
    if (DROPPED.some((pattern) => pattern.test(key))) delete attributes[key];
  }
  const route = typeof attributes['http.route'] === 'string' ? attributes['http.route'] : undefined;
  for (const key of URL_ATTRIBUTES) {
    const value = attributes[key];
    if (typeof value !== 'string') continue;
    if (key === 'url.query') delete attributes[key];
    else if (server) {
      // An incoming request: its path may name a person (/users/{userName}); the route template names none.
      if (route && (key === 'http.target' || key === 'url.path')) attributes[key] = route;
      else delete attributes[key];
    } else {
      // An outgoing call (a push hub, a webhook): its path or query may carry a token; its origin does not.
      try {
        attributes[key] = key === 'http.host' ? value : new URL(value).origin;
      } catch {
        delete attributes[key];
      }
    }
  }
}

interface ExportableSpan {
  kind: number;
  attributes: Record<string, unknown>;
  events: { attributes?: Record<string, unknown> }[];
}

/**
 * Starts OpenTelemetry when OTEL_EXPORTER_OTLP_ENDPOINT is set (OTLP over HTTP, JSON unless
 * OTEL_EXPORTER_OTLP_PROTOCOL says otherwise); answers whether it did. `version` is the service's.
 * The only place outside libs/config that reads the environment: it runs before the configuration
 * (and everything it loads) so that the instrumentations see pg and http load; the variables are the
 * OpenTelemetry SDK's own, which it reads itself too.
 */
export function startTracing(env: NodeJS.ProcessEnv, version: string): boolean {
  if (!env.OTEL_EXPORTER_OTLP_ENDPOINT || api) return api !== undefined;
  const { NodeSDK } = require('@opentelemetry/sdk-node') as typeof import('@opentelemetry/sdk-node');
  const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-http') as typeof import('@opentelemetry/exporter-trace-otlp-http');
  const { HttpInstrumentation } = require('@opentelemetry/instrumentation-http') as typeof import('@opentelemetry/instrumentation-http');
  const { PgInstrumentation } = require('@opentelemetry/instrumentation-pg') as typeof import('@opentelemetry/instrumentation-pg');
  const { BatchSpanProcessor } = require('@opentelemetry/sdk-trace-base') as typeof import('@opentelemetry/sdk-trace-base');
  const { resourceFromAttributes } = require('@opentelemetry/resources') as typeof import('@opentelemetry/resources');
  const otel = require('@opentelemetry/api') as typeof OtelApi;
  const batch = new BatchSpanProcessor(new OTLPTraceExporter());
  const redacting = {
    onStart: () => undefined,
    onEnd: (span: ExportableSpan) => {
      redactAttributes(span.attributes, span.kind === otel.SpanKind.SERVER);
      for (const event of span.events) if (event.attributes) redactAttributes(event.attributes, span.kind === otel.SpanKind.SERVER);
      batch.onEnd(span as never);
    },
    forceFlush: () => batch.forceFlush(),
    shutdown: () => batch.shutdown(),
  };
  const sdk = new NodeSDK({
    // Only what is declared here: the host and process detectors would add the OS user and command line.
    autoDetectResources: false,
    resource: resourceFromAttributes({ 'service.name': env.OTEL_SERVICE_NAME || 'credential-platform', 'service.version': version }),
    spanProcessors: [redacting as never],
    instrumentations: [
      new HttpInstrumentation({
        // Health probes and metrics scrapes every few seconds would drown the traces.
        ignoreIncomingRequestHook: (request) => (request.url ?? '').startsWith('/health/'),
      }),
      // Statement text only (its parameters are placeholders), never the values; no span for pool.connect.
      new PgInstrumentation({ enhancedDatabaseReporting: false, ignoreConnectSpans: true }),
    ],
  });
  sdk.start();
  api = otel;
  process.once('beforeExit', () => void sdk.shutdown());
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => void batch.forceFlush());
  return true;
}
