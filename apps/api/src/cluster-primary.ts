import cluster, { Worker } from 'node:cluster';
import { AppConfig } from '@app/config';
import { Logger, listenClusterMetrics } from '@app/observability';
import { EMBEDDED_POSTGRES_LIVENESS, EmbeddedPostgresHandle, startEmbeddedPostgres } from '@app/persistence';
import { provisionEmbeddedHsm } from './app.module';

/** How long the workers may take to drain after SIGTERM. */
const STOP_DEADLINE_MS = 15_000;
const RESTART_DELAY_MS = 1_000;

/**
 * WORKERS > 1: this process owns what must exist once per host, and runs WORKERS service processes
 * that share the port (Node's cluster module). It starts the embedded PostgreSQL and hands its URL to
 * the workers, provisions the embedded SoftHSM2 token and JWT_KEY before any worker opens it (so
 * that workers never race to generate the key; each then owns its own PKCS#11 session, pkcs11.md
 * rule 9), serves the workers' summed metrics on METRICS_PORT, restarts a worker that dies, tells
 * the workers when the embedded PostgreSQL has been down too long (their /health/live turns red),
 * and on SIGTERM stops them all before the database.
 */
export async function runClusterPrimary(config: AppConfig, logger: Logger): Promise<void> {
  let embedded: EmbeddedPostgresHandle | undefined;
  const workerEnv: Record<string, string> = {};
  const tellLiveness = (worker: Worker) => {
    if (worker.isConnected()) worker.send({ [EMBEDDED_POSTGRES_LIVENESS]: embedded?.isLive() ?? true });
  };
  if (config.embeddedDatabase) {
    embedded = await startEmbeddedPostgres({
      dataDir: config.dataDir,
      placementDir: config.embeddedPostgresDir,
      port: config.embeddedPostgresPort,
      password: config.embeddedPostgresPassword!,
      restartTimeoutMs: config.embeddedPostgresRestartTimeoutS * 1000,
      onWarning: (message) => logger.warn({ component: 'embedded-postgres' }, message),
      onError: (message) => logger.error({ component: 'embedded-postgres' }, message),
      onLivenessChange: () => Object.values(cluster.workers ?? {}).forEach((worker) => worker && tellLiveness(worker)),
    });
    workerEnv.DATABASE_URL = embedded.socketUrl;
  }
  provisionEmbeddedHsm(config, logger);
  const metricsServer = await listenClusterMetrics(config.metricsPort, config.metricsHost);

  let stopping = false;
  const fork = (): Worker =>
    cluster
      .fork(workerEnv)
      // Once it listens, the worker hears the primary (its handler is set before it listens).
      .once('listening', function (this: Worker) {
        tellLiveness(this);
      })
      .once('exit', (code, signal) => {
        if (stopping) return;
        logger.error({ code, signal }, 'a service worker exited; starting another');
        setTimeout(fork, RESTART_DELAY_MS).unref();
      });
  for (let i = 0; i < config.workers; i++) fork();
  logger.info({ workers: config.workers, port: config.port }, 'cluster primary started its workers');

  const stop = async (signal: NodeJS.Signals): Promise<void> => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping the workers');
    const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined);
    const exits = workers.map((w) => new Promise<void>((done) => (w.isDead() ? done() : w.once('exit', () => done()))));
    for (const worker of workers) worker.process.kill('SIGTERM');
    const deadline = setTimeout(() => workers.forEach((w) => w.process.kill('SIGKILL')), STOP_DEADLINE_MS);
    await Promise.all(exits);
    clearTimeout(deadline);
    metricsServer?.close();
    await embedded?.stop();
    process.exit(0);
  };
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => void stop(signal));
}
