export * from './audit-catalogue';
export * from './audit-log';
export * from './audit.repository';
export * from './audit-filter';
export * from './audited.decorator';
export * from './audit-events.controller';
export * from './audit-actions.controller';
export * from './audit.module';
