export { HsmConfigurationError, SignerUnavailableError, type HsmConfigurationErrorCode } from './hsm.errors';
export { HsmModule, type HsmModuleAsyncOptions, type HsmModuleOptions } from './hsm.module';
export { Pkcs11Signer, type HsmLogFn, type HsmLogger, type HsmOptions } from './pkcs11-signer.adapter';
export { ensureSoftHsmToken, generateSoftHsmKey, type SoftHsmKeyOptions, type SoftHsmToken, type SoftHsmTokenOptions } from './softhsm-provisioning';
export { Signer, type JwsAlgorithm, type SigningJwk } from './signer.port';
