export * from './data-source';
export * from './database';
export * from './embedded-postgres';
export * from './persistence.module';
export * from './change-feed';
export * from './group-commit';
export * from './feed-cache';
export { EmbeddedPostgresError } from './embedded-postgres-placement';
export * from './database-unavailable';
