import { Inject, Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { LOGGER, Logger } from '@app/observability';
import { DataCipher, ResealResult, resealAll } from '@app/common';
import { PushGatewayRepository } from './push-gateway.repository';
import { sealContext } from './push-gateway.service';

/**
 * Key rotation (DECISIONS 10): at start, every connection string sealed with an older key of
 * DATA_ENCRYPTION_KEYS is sealed again with the first key, so that after one restart with
 * `new,old` the old key can be removed. Values sealed with a key the ring no longer holds are left
 * as they are and named in the log by gateway id and key id (never a value); a replace that sends a
 * new connection string repairs them. Idempotent and safe with several instances starting at once:
 * each write is conditional on the value read.
 */
@Injectable()
export class ConnectionStringResealer implements OnApplicationBootstrap {
  constructor(
    private readonly gateways: PushGatewayRepository,
    private readonly cipher: DataCipher,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    try {
      await this.run();
    } catch (error) {
      this.logger.error({ err: error }, 'sealing connection strings with the newest data encryption key failed; they stay readable with the older keys');
    }
  }

  async run(): Promise<ResealResult> {
    const { resealed, unreadable } = await resealAll(
      this.cipher,
      (keyId, after, limit) => this.gateways.findSealedWithOtherKey(keyId, after, limit),
      (row) => [
        {
          sealed: row.connectionString,
          context: sealContext(row.org_id, row.id),
          write: (from, to) => this.gateways.reseal(row.org_id, row.id, from, to),
        },
      ],
    );
    if (resealed > 0) this.logger.info({ resealed, keyId: this.cipher.currentKeyId }, 'connection strings sealed again with the newest data encryption key');
    if (unreadable.length > 0) {
      this.logger.warn(
        { gateways: unreadable.slice(0, 50) },
        'connection strings sealed with a key DATA_ENCRYPTION_KEYS no longer holds (or altered); add the key back, or replace those gateways with a new connectionString',
      );
    }
    return { resealed, unreadable };
  }
}
