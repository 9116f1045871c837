import { Global, Module } from '@nestjs/common';
import { AuditActionsController } from './audit-actions.controller';
import { AuditEventsController } from './audit-events.controller';
import { AuditCheckpointKeyController, AuditVerificationController } from './audit-verification.controller';
import { AuditChainer } from './audit-chainer';
import { AuditCheckpoints } from './audit-checkpoints';
import { AuditExporter } from './audit-export';
import { AuditLog } from './audit-log';
import { AuditRetention } from './audit-retention';
import { AuditVerifier } from './audit-verifier';
import { AuditRepository } from './audit.repository';

/**
 * The audit log: its one writer (AuditLog), its reads, its hash chain (AuditChainer, AuditVerifier), its retention (AuditRetention),
 * GET /admin/v1/organizations/{org}/audit-events and the catalogue of actions, GET /admin/v1/audit-actions.
 */
@Global()
@Module({
  controllers: [AuditEventsController, AuditActionsController, AuditCheckpointKeyController, AuditVerificationController],
  providers: [AuditLog, AuditRepository, AuditChainer, AuditCheckpoints, AuditVerifier, AuditExporter, AuditRetention],
  exports: [AuditLog, AuditRepository, AuditChainer, AuditCheckpoints, AuditVerifier, AuditExporter, AuditRetention],
})
export class AuditModule {}
