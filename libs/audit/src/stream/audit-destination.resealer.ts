import { Inject, Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { DataCipher, ResealResult, resealAll } from '@app/common';
import { LOGGER, Logger } from '@app/observability';
import { AuditDestinationRepository } from './audit-destination.repository';
import { destinationSealContext } from './audit-stream-transport';

/**
 * Key rotation for the audit stream's secrets (DECISIONS 10, 11.4), as for connection strings: at
 * start, every webhook secret and TLS client key sealed with an older key of DATA_ENCRYPTION_KEYS is
 * sealed again with the first key, so that after one restart with `new,old` the old key can be
 * removed. A value sealed with a key the ring no longer holds stays as it is and is named in the log
 * by destination id and key id (never a value). Each write is conditional on the value read.
 */
@Injectable()
export class AuditDestinationResealer implements OnApplicationBootstrap {
  constructor(
    private readonly destinations: AuditDestinationRepository,
    private readonly cipher: DataCipher,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    try {
      await this.run();
    } catch (error) {
      this.logger.error({ err: error }, 'sealing audit destination secrets with the newest data encryption key failed; they stay readable with the older keys');
    }
  }

  async run(): Promise<ResealResult> {
    const { resealed, unreadable } = await resealAll(
      this.cipher,
      (keyId, after, limit) => this.destinations.findSealedWithOtherKey(keyId, after, limit),
      (row) =>
        (['secret', 'clientKey'] as const).map((field) => ({
          sealed: row[field],
          context: destinationSealContext(row.org_id, row.id, field),
          write: (from, to) => this.destinations.reseal(row.id, field, from, to),
        })),
    );
    if (resealed > 0)
      this.logger.info({ resealed, keyId: this.cipher.currentKeyId }, 'audit destination secrets sealed again with the newest data encryption key');
    if (unreadable.length > 0) {
      this.logger.warn(
        { destinations: unreadable.slice(0, 50) },
        'audit destination secrets sealed with a key DATA_ENCRYPTION_KEYS no longer holds (or altered); add the key back, or delete and create those destinations',
      );
    }
    return { resealed, unreadable };
  }
}
