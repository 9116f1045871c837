import { Global, Module } from '@nestjs/common';
import { AuditActionsController } from './audit-actions.controller';
import { AuditEventsController } from './audit-events.controller';
import { AuditLog } from './audit-log';
import { AuditRepository } from './audit.repository';

/** The audit log: its one writer (AuditLog), its reads, GET /admin/v1/organizations/{org}/audit-events and the catalogue of actions, GET /admin/v1/audit-actions. */
@Global()
@Module({
  controllers: [AuditEventsController, AuditActionsController],
  providers: [AuditLog, AuditRepository],
  exports: [AuditLog, AuditRepository],
})
export class AuditModule {}
