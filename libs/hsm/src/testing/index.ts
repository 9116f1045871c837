// Test hooks of the HSM library: never imported by production code.
export { simulateModuleFailure, takeSoftHsmTokenAway, type HsmUnderTest } from './module-failure';
export { buildSlowFailingModule, type SlowFailingModule } from './slow-failing-module';
export { createTemporarySoftHsmToken, type TemporarySoftHsmToken } from './temporary-softhsm-token';
export { verifiesJws, waitUntil } from './verify-jws';
