export * from './patch-op';
