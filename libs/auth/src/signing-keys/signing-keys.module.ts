import { Module } from '@nestjs/common';
import { SigningKeyRepository } from './signing-key.repository';
import { SigningKeys } from './signing-keys.service';

/**
 * The token-signing keys (DECISIONS 12.1), for the token service and the command line. Needs the
 * HSM's `Signer` and `KeyStore` (HsmModule, global) besides the persistence and audit modules.
 */
@Module({
  providers: [SigningKeyRepository, SigningKeys],
  exports: [SigningKeys],
})
export class SigningKeysModule {}
