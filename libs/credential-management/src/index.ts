export * from './credential-management.module';
export * from './users/user.schema';
