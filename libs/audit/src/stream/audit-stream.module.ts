import { Module } from '@nestjs/common';
import { DataCipher } from '@app/common';
import { AppConfig } from '@app/config';
import { AuditDestinationRepository } from './audit-destination.repository';
import { AuditDestinationResealer } from './audit-destination.resealer';
import { AuditDestinationService } from './audit-destination.service';
import { OrganizationAuditDestinationsController, PlatformAuditDestinationsController } from './audit-destinations.controller';
import { AuditOutboxRepository } from './audit-outbox.repository';
import { AuditStreamSender } from './audit-stream-sender';
import { AuditStreamTransport } from './audit-stream-transport';

/**
 * The audit event stream (DECISIONS 11.4): destinations and their admin routes, and the outbox
 * sender. The service loads it; the command line does not (it sends nothing).
 */
@Module({
  controllers: [OrganizationAuditDestinationsController, PlatformAuditDestinationsController],
  providers: [
    AuditDestinationRepository,
    AuditOutboxRepository,
    AuditDestinationService,
    AuditStreamTransport,
    AuditStreamSender,
    AuditDestinationResealer,
    // Seals the webhook secrets and TLS client keys (DECISIONS 10, as connection strings).
    { provide: DataCipher, inject: [AppConfig], useFactory: (config: AppConfig) => new DataCipher(config.dataEncryptionKeys) },
  ],
  exports: [AuditStreamSender],
})
export class AuditStreamModule {}
