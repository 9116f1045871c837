export { HsmConfigurationError, KeyStoreError, SignerUnavailableError, type HsmConfigurationErrorCode, type KeyStoreErrorCode } from './hsm.errors';
export type { HsmLogFn, HsmLogger } from './hsm.logger';
export { HsmModule, type HsmModuleAsyncOptions, type HsmModuleOptions } from './hsm.module';
export { KeyStore, type HsmKeyPair, type KeyAlgorithm, type KeyStoreHash, type SignatureEncoding, type SignOptions } from './key-store.port';
export { Pkcs11Hsm, type HsmOptions, type HsmReconnectOutcome } from './pkcs11-hsm';
export { Pkcs11KeyStore } from './pkcs11-key-store.adapter';
export { Pkcs11Signer } from './pkcs11-signer.adapter';
export { signingJwkFromSpki } from './pkcs11-public-key';
export { Signer, type JwsAlgorithm, type SigningJwk, type SigningKeyRef } from './signer.port';
export {
  ensureSoftHsmToken,
  generateSoftHsmKey,
  openSoftHsmDirectory,
  provisionSoftHsmToken,
  type SoftHsmKeyOptions,
  type SoftHsmToken,
  type SoftHsmTokenOptions,
} from './softhsm-provisioning';
