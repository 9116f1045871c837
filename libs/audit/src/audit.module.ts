import { Global, Module } from '@nestjs/common';
import { AuditEventsController } from './audit-events.controller';
import { AuditLog } from './audit-log';
import { AuditRepository } from './audit.repository';

/** The audit log: its one writer (AuditLog), its reads, and GET /admin/v1/organizations/{org}/audit-events. */
@Global()
@Module({
  controllers: [AuditEventsController],
  providers: [AuditLog, AuditRepository],
  exports: [AuditLog, AuditRepository],
})
export class AuditModule {}
