import { Global, Inject, Module, OnApplicationShutdown } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AppConfig } from '@app/config';
import { LOGGER, Logger } from '@app/observability';
import { dataSourceOptions, runMigrations } from './data-source';
import { ChangeFeed } from './change-feed';
import { Database } from './database';
import { EmbeddedPostgresHandle, startEmbeddedPostgres } from './embedded-postgres';

const EMBEDDED = Symbol('EMBEDDED_POSTGRES');

/** The key of the cluster primary's message that tells its workers the embedded PostgreSQL's liveness. */
export const EMBEDDED_POSTGRES_LIVENESS = 'embeddedPostgresLive';

/**
 * Whether the embedded PostgreSQL is alive, or has been down past EMBEDDED_PG_RESTART_TIMEOUT_S,
 * which only a restart of the service may cure. This process's own, or, in a cluster worker, the
 * one its primary runs, as the primary tells (`tell`). An external database's outage (DATABASE_URL)
 * turns readiness red, never liveness.
 */
export class DatabaseLiveness {
  private primarySaysLive = true;

  constructor(private readonly embedded: EmbeddedPostgresHandle | undefined) {}

  /** In a cluster worker: the primary's word on the embedded PostgreSQL it runs. */
  tell(live: boolean): void {
    this.primarySaysLive = live;
  }

  isLive(): boolean {
    return this.primarySaysLive && (this.embedded?.isLive() ?? true);
  }
}

/**
 * Connects to DATABASE_URL, or starts the embedded PostgreSQL when it is unset, and applies pending
 * migrations before anything else runs.
 */
@Global()
@Module({
  providers: [
    {
      provide: EMBEDDED,
      inject: [AppConfig, LOGGER],
      useFactory: async (config: AppConfig, logger: Logger): Promise<EmbeddedPostgresHandle | undefined> => {
        if (!config.embeddedDatabase) return undefined;
        const handle = await startEmbeddedPostgres({
          dataDir: config.dataDir,
          placementDir: config.embeddedPostgresDir,
          port: config.embeddedPostgresPort,
          password: config.embeddedPostgresPassword!,
          restartTimeoutMs: config.embeddedPostgresRestartTimeoutS * 1000,
          onLog: (message) => logger.debug({ component: 'embedded-postgres' }, message.trim()),
          onWarning: (message) => logger.warn({ component: 'embedded-postgres' }, message),
          onError: (message) => logger.error({ component: 'embedded-postgres' }, message),
        });
        logger.info({ port: config.embeddedPostgresPort, dataDir: config.dataDir }, 'embedded PostgreSQL started');
        return handle;
      },
    },
    { provide: DatabaseLiveness, inject: [EMBEDDED], useFactory: (embedded: EmbeddedPostgresHandle | undefined) => new DatabaseLiveness(embedded) },
    {
      provide: DataSource,
      inject: [AppConfig, EMBEDDED, LOGGER],
      useFactory: async (config: AppConfig, embedded: EmbeddedPostgresHandle | undefined, logger: Logger): Promise<DataSource> => {
        const dataSource = new DataSource(dataSourceOptions(embedded?.connection ?? config.databaseUrl!, config.databasePoolSize));
        try {
          await dataSource.initialize();
        } catch (error) {
          // The message of pg never contains the password; the URL is not logged.
          throw new Error(`Cannot connect to PostgreSQL: ${(error as Error).message}. Check DATABASE_URL.`, { cause: error });
        }
        const applied = await runMigrations(dataSource);
        if (applied.length > 0) logger.info({ migrations: applied }, 'database migrations applied');
        return dataSource;
      },
    },
    {
      provide: Database,
      inject: [DataSource, LOGGER, AppConfig],
      useFactory: (dataSource: DataSource, logger: Logger, config: AppConfig) => {
        const db = new Database(dataSource, { strictTransactions: config.databaseStrictTransactions });
        // One line per change of state, not one stack trace per request (Issue 15 item 2).
        db.onAvailabilityChange = ({ available, reason, downForMs }) =>
          available ? logger.warn({ downForMs }, 'database reachable again') : logger.error({ reason }, 'database unreachable; answering 503 until it returns');
        return db;
      },
    },
    {
      provide: ChangeFeed,
      inject: [Database],
      useFactory: async (db: Database) => {
        const feed = new ChangeFeed(db.pool);
        await feed.start();
        return feed;
      },
    },
  ],
  exports: [Database, DataSource, ChangeFeed, DatabaseLiveness],
})
export class PersistenceModule implements OnApplicationShutdown {
  constructor(
    private readonly dataSource: DataSource,
    private readonly changes: ChangeFeed,
    @Inject(EMBEDDED) private readonly embedded: EmbeddedPostgresHandle | undefined,
  ) {}

  async onApplicationShutdown(): Promise<void> {
    await this.changes.stop();
    if (this.dataSource.isInitialized) await this.dataSource.destroy();
    await this.embedded?.stop();
  }
}
