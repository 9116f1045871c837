export { dataSourceOptions, PLAN_CACHE_MODE, runMigrations } from './data-source';
export {
  Database,
  isPgError,
  MAX_NAMED_SHAPES,
  PG_FOREIGN_KEY_VIOLATION,
  PG_UNIQUE_VIOLATION,
  prepared,
  preparedShape,
  type PreparedStatement,
  type Transaction,
} from './database';
export { type EmbeddedPostgresHandle, type PostgresConnection, startEmbeddedPostgres } from './embedded-postgres';
export { DatabaseLiveness, EMBEDDED_POSTGRES_LIVENESS, PersistenceModule } from './persistence.module';
export { type Change, ChangeFeed, type ChangeTopic } from './change-feed';
export { type BatchWriter, GroupCommit } from './group-commit';
export { FeedCache, type FeedCacheOptions, type TopicChange } from './feed-cache';
export { EmbeddedPostgresError } from './embedded-postgres-placement';
export { connectionFailureOf, DatabaseUnavailableError } from './database-unavailable';
