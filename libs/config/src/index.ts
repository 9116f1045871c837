export { AppConfig, type AuditStreamConfig, JWKS_MAX_AGE_S, type PushDeliveryConfig } from './app-config';
export { ConfigurationError, loadConfig, parseKeyring } from './load-config';
export { ConfigModule } from './config.module';
