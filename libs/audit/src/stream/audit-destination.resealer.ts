import { Inject, Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { DataCipher, UnknownKeyError } from '@app/common';
import { LOGGER, Logger } from '@app/observability';
import { AuditDestinationRepository } from './audit-destination.repository';
import { destinationSealContext } from './audit-stream-transport';

const BATCH = 200;

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

  async run(): Promise<{ resealed: number; unreadable: { id: string; keyId: string }[] }> {
    let resealed = 0;
    const unreadable: { id: string; keyId: string }[] = [];
    for (let after = '0'; ;) {
      const batch = await this.destinations.findSealedWithOtherKey(this.cipher.currentKeyId, after, BATCH);
      for (const row of batch) {
        for (const field of ['secret', 'clientKey'] as const) {
          const sealed = row[field];
          if (!sealed || sealed.keyId === this.cipher.currentKeyId) continue;
          const context = destinationSealContext(row.org_id, row.id, field);
          let plain: string;
          try {
            plain = this.cipher.open(sealed, context);
          } catch (error) {
            unreadable.push({ id: row.id, keyId: error instanceof UnknownKeyError ? error.keyId : sealed.keyId });
            continue;
          }
          if (await this.destinations.reseal(row.id, field, sealed, this.cipher.seal(plain, context))) resealed++;
        }
      }
      if (batch.length < BATCH) break;
      after = batch[batch.length - 1].id;
    }
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
