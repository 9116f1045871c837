export * from './auth.module';
export * from './tokens/token.service';
export * from './tokens/jws.service';
export * from './tokens/purge.job';
export * from './clients/assertion-verifier';
