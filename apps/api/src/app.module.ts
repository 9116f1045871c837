import { DynamicModule, Module } from '@nestjs/common';
import cluster from 'node:cluster';
import { join } from 'node:path';
import { AccountsModule } from '@app/accounts';
import { AuditModule, AuditStreamModule } from '@app/audit';
import { PkiModule } from '@app/pki';
import { AuthModule } from '@app/auth';
import { ClockModule } from '@app/common';
import { AppConfig, ConfigModule } from '@app/config';
import { DeliveryGatewayModule } from '@app/delivery-gateway';
import { DeviceModule } from '@app/device';
import { CredentialManagementModule } from '@app/credential-management';
import { HsmModule, HsmModuleOptions, HsmReconnectOutcome, openSoftHsmDirectory, provisionSoftHsmToken } from '@app/hsm';
import { LOGGER, Logger, Metrics, ObservabilityModule } from '@app/observability';
import { PersistenceModule } from '@app/persistence';
import { HealthController } from './health.controller';
import { IndexController } from './index.controller';
import { ShutdownState } from './shutdown';

/**
 * The embedded SoftHSM2 token and JWT_KEY under DATA_DIR, made once per start by the primary (or the
 * single process) before any service process opens the token, under a lock (libs/hsm/README.md, "Provisioning").
 */
export function provisionEmbeddedHsm(config: AppConfig, logger: Logger): void {
  const { hsm } = config;
  if (!config.embeddedHsm) return;
  const directory = join(config.dataDir, 'softhsm');
  provisionSoftHsmToken({
    directory,
    tokenLabel: hsm.tokenLabel,
    soPin: hsm.soPin!,
    pin: hsm.pin,
    keyLabel: hsm.keyLabel,
    logger: logger.child({ component: 'hsm' }),
  });
}

/**
 * The HSM: the configured PKCS#11 module, or the embedded SoftHSM2 token under DATA_DIR. `metrics`
 * counts reconnect attempts; the command line, which serves no metrics, passes none.
 */
export function hsmOptions(config: AppConfig, logger: Logger, metrics?: Metrics): HsmModuleOptions {
  const { hsm } = config;
  const common = {
    tokenLabel: hsm.tokenLabel,
    pin: hsm.pin,
    keyLabel: hsm.keyLabel,
    healthCheckIntervalMs: hsm.healthCheckIntervalS * 1000,
    onReconnectAttempt: metrics ? (outcome: HsmReconnectOutcome) => metrics.hsmReconnectAttempts.inc({ outcome }) : undefined,
    logger: logger.child({ component: 'hsm' }),
  };
  if (!config.embeddedHsm) return { ...common, modulePath: hsm.modulePath! };
  // A cluster worker only opens the token its primary provisioned before forking it.
  if (!cluster.isWorker) provisionEmbeddedHsm(config, logger);
  return { ...common, modulePath: openSoftHsmDirectory(join(config.dataDir, 'softhsm')).modulePath };
}

/**
 * Composes the service. Global guard, filter and parsers are registered here and in app.setup.ts,
 * so that e2e tests run the production pipeline.
 */
@Module({})
export class AppModule {
  static forRoot(config: AppConfig, logger: Logger, metrics: Metrics): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot(config),
        ObservabilityModule.forRoot(logger, metrics),
        ClockModule,
        PersistenceModule,
        HsmModule.forRootAsync({ inject: [AppConfig, LOGGER, Metrics], useFactory: (c: AppConfig, l: Logger, m: Metrics) => hsmOptions(c, l, m) }),
        AuditModule,
        AuditStreamModule,
        AccountsModule,
        AuthModule,
        DeliveryGatewayModule,
        DeviceModule,
        CredentialManagementModule,
        PkiModule,
      ],
      controllers: [HealthController, IndexController],
      providers: [ShutdownState],
    };
  }
}
