// First: tracing (when OTEL_EXPORTER_OTLP_ENDPOINT is set) must start before Nest, pg and http load.
import './tracing';
import 'reflect-metadata';
import cluster from 'node:cluster';
import { NestFactory } from '@nestjs/core';
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { ConfigurationError, loadConfig } from '@app/config';
import { Metrics, PinoNestLogger, createLoggers } from '@app/observability';
import { DatabaseLiveness, EMBEDDED_POSTGRES_LIVENESS } from '@app/persistence';
import { AppModule } from './app.module';
import { configureApp, createAdapter } from './app.setup';
import { runClusterPrimary } from './cluster-primary';
import { ShutdownState } from './shutdown';
import { startBanner } from './start-banner';

/** How long in-flight requests and the shutdown hooks may take after SIGTERM. */
const SHUTDOWN_DEADLINE_MS = 15_000;

async function bootstrap(): Promise<void> {
  const config = loadConfig();
  const loggers = createLoggers(config.logLevel);
  const { logger } = loggers;
  // Started by ops/start.js (npm start), the service holds an IPC channel to it: when that process
  // ends, however it ends (killed outright included), this one stops as on SIGTERM, in order,
  // instead of living on orphaned with its PostgreSQL (issue 34). Cluster workers have a channel to
  // their primary, which Node's cluster module watches itself.
  if (cluster.isPrimary && process.channel) {
    process.channel.unref();
    process.once('disconnect', () => {
      logger.warn('the process that started this one (ops/start.js) has ended; stopping');
      process.kill(process.pid, 'SIGTERM');
    });
  }
  if (config.workers > 1 && cluster.isPrimary) {
    await runClusterPrimary(config, logger);
    return;
  }
  // A signal during start-up (database connection and migrations, the HSM login) is answered once
  // the start has finished, by the same ordered shutdown: the default action would end the process
  // mid-way, and SoftHSM2 rewrites its token file at every login, so a kill there can leave a token
  // file that no later start reads.
  const running: { app?: NestFastifyApplication } = {};
  let requested: NodeJS.Signals | undefined;
  const shutdown = (started: NestFastifyApplication, signal: NodeJS.Signals) => {
    // Readiness red and new requests 503 first; then the server stops accepting and drains.
    started.get(ShutdownState).closing = true;
    logger.info({ signal }, 'shutting down');
    // Graceful shutdown: stop accepting, let in-flight requests and HSM signs drain (the shutdown
    // hooks close the signer, the pool and the embedded PostgreSQL), then exit 0.
    started.close().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      if (requested) return;
      requested = signal;
      // A dependency that never answers (a vanished database) must not keep the process alive; a
      // timer cannot interrupt a synchronous HSM call, so this never cuts a token write short.
      setTimeout(() => {
        logger.error({ deadlineMs: SHUTDOWN_DEADLINE_MS }, 'graceful shutdown did not finish in time; exiting');
        process.exit(1);
      }, SHUTDOWN_DEADLINE_MS).unref();
      if (running.app) shutdown(running.app, signal);
      else logger.info({ signal }, 'stop requested during start-up; stopping once started');
    });
  }

  const metrics = new Metrics();
  // In a cluster the primary serves the summed metrics of its workers. A worker answers it from here
  // on, not once it listens: the primary asks every connected worker and answers a scrape only when
  // all have answered, so a worker still starting (or restarting after a crash) would turn every
  // scrape meanwhile into a 503 after the aggregator's 5 s timeout.
  if (cluster.isWorker) metrics.answerClusterPrimary();
  const created = await NestFactory.create<NestFastifyApplication>(AppModule.forRoot(config, logger, metrics), createAdapter(config), {
    logger: new PinoNestLogger(logger),
    // Let start-up refusals reach the catch below, which states them plainly.
    abortOnError: false,
  });
  await configureApp(created, config, loggers, metrics);
  // In a cluster the primary runs the embedded PostgreSQL, and tells whether it is alive once this
  // worker listens and whenever that changes.
  if (cluster.isWorker) {
    const liveness = created.get(DatabaseLiveness);
    process.on('message', (message: Record<string, unknown> | null) => {
      const live = message?.[EMBEDDED_POSTGRES_LIVENESS];
      if (typeof live === 'boolean') liveness.tell(live);
    });
  }
  await created.listen(config.port, config.host);
  const metricsServer = cluster.isWorker ? undefined : await metrics.listen(config.metricsPort, config.metricsHost);
  created.getHttpServer().once('close', () => metricsServer?.close());
  logger.info({ url: config.publicBaseUrl, port: config.port, metricsPort: config.metricsPort }, 'credential platform listening');
  // Once per start (the first worker of a cluster), on standard error beside the JSON log on standard output.
  if (!cluster.isWorker || cluster.worker?.id === 1) process.stderr.write(startBanner(config));
  running.app = created;
  if (requested) shutdown(created, requested);
}

bootstrap().catch((error: unknown) => {
  // Start-up refusals (configuration, HSM, database) are stated plainly, without a stack trace.
  const known =
    error instanceof ConfigurationError || ['HsmConfigurationError', 'ScopeAssignmentError', 'EmbeddedPostgresError'].includes((error as Error)?.name);
  process.stderr.write(`Start-up failed: ${known ? (error as Error).message : ((error as Error)?.stack ?? String(error))}\n`);
  process.exit(1);
});
