export * from './logger';
export * from './metrics';
export * from './observability.module';
export * from './tracing';
