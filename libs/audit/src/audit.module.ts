import { Global, Module } from '@nestjs/common';
import { AuditEventsController } from './audit-events.controller';
import { AuditCheckpointKeyController, AuditVerificationController } from './audit-verification.controller';
import { AuditChainer } from './audit-chainer';
import { AuditCheckpoints } from './audit-checkpoints';
import { AuditLog } from './audit-log';
import { AuditVerifier } from './audit-verifier';
import { AuditRepository } from './audit.repository';

/** The audit log: its one writer (AuditLog), its reads, its hash chain (AuditChainer, AuditVerifier), and GET /admin/v1/organizations/{org}/audit-events. */
@Global()
@Module({
  controllers: [AuditEventsController, AuditCheckpointKeyController, AuditVerificationController],
  providers: [AuditLog, AuditRepository, AuditChainer, AuditCheckpoints, AuditVerifier],
  exports: [AuditLog, AuditRepository, AuditChainer, AuditCheckpoints, AuditVerifier],
})
export class AuditModule {}
