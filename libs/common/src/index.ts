export * from './domain-error';
export * from './scim';
export * from './clock';
export * from './clock.module';
export * from './principal';
export * from './decorators';
export * from './ids';
export * from './validation';
