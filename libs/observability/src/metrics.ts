import { createServer, Server } from 'node:http';
import { AggregatorRegistry, Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** One registry per process; /metrics is served on METRICS_PORT, never on the public port. */
export class Metrics {
  readonly registry = new Registry();
  readonly httpRequests = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request duration by route and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    registers: [this.registry],
  });
  readonly tokensIssued = new Counter({
    name: 'tokens_issued_total',
    help: 'Access tokens issued, by authentication method',
    labelNames: ['method'] as const,
    registers: [this.registry],
  });
  readonly hsmSigns = new Histogram({
    name: 'hsm_sign_duration_seconds',
    help: 'Signs with a CA key in the HSM, by use (certificate, crl, ocsp)',
    labelNames: ['use'] as const,
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05],
    registers: [this.registry],
  });
  readonly hsmReconnectAttempts = new Counter({
    name: 'hsm_reconnect_attempts_total',
    help: 'Attempts to reconnect to the HSM after a module error (one a second while it is away), by outcome',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  readonly authFailures = new Counter({
    name: 'token_authentication_failures_total',
    help: 'Failed client or user authentications at the token service',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  // Push delivery per gateway (DECISIONS 10.5): `gateway` is the gateway's id, `org` its organization.
  readonly pushSent = new Counter({
    name: 'push_notifications_sent_total',
    help: 'Notifications a notification hub accepted, by gateway',
    labelNames: ['org', 'gateway'] as const,
    registers: [this.registry],
  });
  readonly pushFailed = new Counter({
    name: 'push_notifications_failed_total',
    help: 'Sends that failed, by gateway and reason (throttled, server, network, timeout: retried; rejected, gone: not retried)',
    labelNames: ['org', 'gateway', 'reason'] as const,
    registers: [this.registry],
  });
  readonly pushRetried = new Counter({
    name: 'push_notifications_retried_total',
    help: 'Failed sends scheduled for another attempt, by gateway',
    labelNames: ['org', 'gateway'] as const,
    registers: [this.registry],
  });
  readonly pushDeadLettered = new Counter({
    name: 'push_notifications_dead_lettered_total',
    help: 'Notifications given up after the last attempt, by gateway',
    labelNames: ['org', 'gateway'] as const,
    registers: [this.registry],
  });
  readonly pushSendDuration = new Histogram({
    name: 'push_send_duration_seconds',
    help: 'One send to a notification hub, request to answer, by gateway',
    labelNames: ['org', 'gateway'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  readonly pushCircuitOpen = new Gauge({
    name: 'push_gateway_circuit_open',
    help: "1 while this instance holds a gateway's notifications back after consecutive failures, else 0",
    labelNames: ['org', 'gateway'] as const,
    registers: [this.registry],
  });

  // The audit event stream per destination (DECISIONS 11.4): `destination` is its id, `org` its organization ('' for the platform's).
  readonly auditStreamDelivered = new Counter({
    name: 'audit_stream_delivered_total',
    help: 'Audit events delivered to a destination',
    labelNames: ['org', 'destination'] as const,
    registers: [this.registry],
  });
  readonly auditStreamFailed = new Counter({
    name: 'audit_stream_failed_total',
    help: 'Failed deliveries of audit events, by destination and coarse reason (timeout, connection_failed, tls_error, http_<status>, ...)',
    labelNames: ['org', 'destination', 'reason'] as const,
    registers: [this.registry],
  });
  readonly auditStreamDeadLettered = new Counter({
    name: 'audit_stream_dead_lettered_total',
    help: 'Audit event deliveries given up (AUDIT_STREAM_MAX_ATTEMPTS or AUDIT_STREAM_MAX_AGE_S), by destination',
    labelNames: ['org', 'destination'] as const,
    registers: [this.registry],
  });
  readonly auditStreamLag = new Histogram({
    name: 'audit_stream_lag_seconds',
    help: 'From an audit event to its delivery at a destination',
    labelNames: ['org', 'destination'] as const,
    buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600],
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }

  /** Starts the metrics listener; port 0 disables it (tests). */
  listen(port: number, host: string): Promise<Server | undefined> {
    return serveMetrics(port, host, () => this.registry.metrics(), this.registry.contentType);
  }

  /** In a cluster worker: answer the primary's requests for this registry instead of listening. */
  answerClusterPrimary(): void {
    AggregatorRegistry.setRegistries([this.registry]);
    // Constructing one installs the worker's IPC listener.
    new AggregatorRegistry();
  }
}

/** In the cluster primary: serve the sum of every worker's metrics on METRICS_PORT. */
export function listenClusterMetrics(port: number, host: string): Promise<Server | undefined> {
  const aggregator = new AggregatorRegistry();
  return serveMetrics(port, host, () => aggregator.clusterMetrics(), aggregator.contentType);
}

async function serveMetrics(port: number, host: string, render: () => Promise<string>, contentType: string): Promise<Server | undefined> {
  if (port === 0) return undefined;
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || req.url?.split('?')[0] !== '/metrics') {
      res.writeHead(404).end();
      return;
    }
    render().then(
      (body) => res.writeHead(200, { 'Content-Type': contentType }).end(body),
      // Say why (e.g. a worker did not answer the primary in time), so a scrape failure is diagnosable.
      (error: unknown) =>
        res.writeHead(503, { 'Content-Type': 'text/plain' }).end(`metrics unavailable: ${error instanceof Error ? error.message : String(error)}\n`),
    );
  });
  await new Promise<void>((resolveListen, reject) => server.once('error', reject).listen(port, host, resolveListen));
  return server;
}
