export * from './certificates';
export * from './fake-clock';
export * from './platform';
export * from './test-app';
export * from './permission-table';
export * from './permission-probes';
export * from './assertions';
export * from './routes';
