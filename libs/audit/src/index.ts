export { AUDIT_CATALOGUE, type AuditAction, auditCatalogueMarkdown, auditCodeOf, TAMPER_EVIDENCE_MARKDOWN } from './audit-catalogue';
export { type Actor, AUDIT_INSERT, type AuditEvent, AuditLog, byActor } from './audit-log';
export {
  canonicalJson,
  CHAIN_COLUMNS,
  type ChainRow,
  type Checkpoint,
  checkpointMessage,
  type EventContent,
  eventContent,
  eventDigest,
  GENESIS_DIGEST,
  rowOfContent,
} from './audit-chain';
export { type ChainProblem, ChainWalk, checkpointRefusal, pruneAnchor, type PrunePoint } from './audit-chain-walk';
export {
  AUDIT_EXPORT_FORMAT,
  AuditExporter,
  type ExportCheckpoint,
  type ExportEvent,
  ExportFormatError,
  type ExportHeader,
  type ExportVerification,
  verifyExport,
} from './audit-export';
export { AuditChainer, CHAIN_BATCH, CHAIN_SELECT, CHAIN_UPDATE } from './audit-chainer';
export { AuditCheckpoints, type StoredCheckpoint } from './audit-checkpoints';
export { AuditVerifier, type ChainVerification, ofChain } from './audit-verifier';
export { AuditRetention, type ChainPruned, PRUNE_BATCH, type RetentionSettingsSource } from './audit-retention';
export { type AuditEventRow, AuditRepository } from './audit.repository';
export { AUDIT_FILTER_NAMES, type AuditFilter, parseAuditFilter } from './audit-filter';
export { AUDIT_DECLARATION, type AuditDeclaration, Audited, NotAudited } from './audited.decorator';
export { AuditEventsController, presentAuditEvent } from './audit-events.controller';
export { AuditActionsController } from './audit-actions.controller';
export { AuditCheckpointKeyController, AuditVerificationController, parseFrom, parseVerificationQuery } from './audit-verification.controller';
export { AuditModule } from './audit.module';
export {
  newWebhookSecret,
  type StreamedEvent,
  streamedEvent,
  type StreamedEventRow,
  SYSLOG_APP_NAME,
  SYSLOG_SD_ID,
  syslogFrame,
  syslogMessage,
  verifyWebhook,
  webhookBody,
  webhookHeaders,
} from './stream/audit-stream-format';
export { AuditStreamSender, streamRetryDelayMs } from './stream/audit-stream-sender';
export { AuditStreamModule } from './stream/audit-stream.module';
