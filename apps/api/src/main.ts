import 'reflect-metadata';
import cluster from 'node:cluster';
import { NestFactory } from '@nestjs/core';
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { ConfigurationError, loadConfig } from '@app/config';
import { Metrics, PinoNestLogger, createLoggers } from '@app/observability';
import { AppModule } from './app.module';
import { configureApp, createAdapter } from './app.setup';
import { runClusterPrimary } from './cluster-primary';
import { ShutdownState } from './shutdown';

/** How long in-flight requests and the shutdown hooks may take after SIGTERM. */
const SHUTDOWN_DEADLINE_MS = 15_000;

async function bootstrap(): Promise<void> {
  const config = loadConfig();
  const loggers = createLoggers(config.logLevel);
  const { logger } = loggers;
  if (config.workers > 1 && cluster.isPrimary) {
    await runClusterPrimary(config, logger);
    return;
  }
  const metrics = new Metrics();
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.forRoot(config, logger, metrics), createAdapter(config), {
    logger: new PinoNestLogger(logger),
    // Let start-up refusals reach the catch below, which states them plainly.
    abortOnError: false,
  });
  await configureApp(app, config, loggers, metrics);
  await app.listen(config.port, config.host);
  // In a cluster the primary serves the summed metrics of its workers.
  if (cluster.isWorker) metrics.answerClusterPrimary();
  const metricsServer = cluster.isWorker ? undefined : await metrics.listen(config.metricsPort, config.host);
  app.getHttpServer().once('close', () => metricsServer?.close());
  logger.info({ url: config.publicBaseUrl, port: config.port, metricsPort: config.metricsPort }, 'credential platform listening');

  // Graceful shutdown: stop accepting, let in-flight requests and HSM signs drain (the shutdown
  // hooks close the signer, the pool and the embedded PostgreSQL), then exit 0.
  let closing = false;
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      if (closing) return;
      closing = true;
      // Readiness red and new requests 503 first; then the server stops accepting and drains.
      app.get(ShutdownState).closing = true;
      logger.info({ signal }, 'shutting down');
      // A dependency that never answers (a vanished database) must not keep the process alive.
      setTimeout(() => {
        logger.error({ deadlineMs: SHUTDOWN_DEADLINE_MS }, 'graceful shutdown did not finish in time; exiting');
        process.exit(1);
      }, SHUTDOWN_DEADLINE_MS).unref();
      app.close().then(
        () => process.exit(0),
        (error: unknown) => {
          logger.error({ err: error }, 'shutdown failed');
          process.exit(1);
        },
      );
    });
  }
}

bootstrap().catch((error: unknown) => {
  // Start-up refusals (configuration, HSM, database) are stated plainly, without a stack trace.
  const known =
    error instanceof ConfigurationError || ['HsmConfigurationError', 'ScopeAssignmentError', 'EmbeddedPostgresError'].includes((error as Error)?.name);
  process.stderr.write(`Start-up failed: ${known ? (error as Error).message : ((error as Error)?.stack ?? String(error))}\n`);
  process.exit(1);
});
