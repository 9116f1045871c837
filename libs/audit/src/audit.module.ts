import { Global, Module } from '@nestjs/common';
import { AuditEventsController } from './audit-events.controller';
import { AuditChainer } from './audit-chainer';
import { AuditLog } from './audit-log';
import { AuditVerifier } from './audit-verifier';
import { AuditRepository } from './audit.repository';

/** The audit log: its one writer (AuditLog), its reads, its hash chain (AuditChainer, AuditVerifier), and GET /admin/v1/organizations/{org}/audit-events. */
@Global()
@Module({
  controllers: [AuditEventsController],
  providers: [AuditLog, AuditRepository, AuditChainer, AuditVerifier],
  exports: [AuditLog, AuditRepository, AuditChainer, AuditVerifier],
})
export class AuditModule {}
