import { Global, Inject, Logger, Module, type DynamicModule, type FactoryProvider, type ModuleMetadata, type OnApplicationShutdown } from '@nestjs/common';
import type { HsmLogger } from './hsm.logger';
import { KeyStore } from './key-store.port';
import { Pkcs11Hsm, type HsmOptions } from './pkcs11-hsm';
import { Pkcs11KeyStore } from './pkcs11-key-store.adapter';
import { Pkcs11Signer } from './pkcs11-signer.adapter';
import { Signer } from './signer.port';

export interface HsmModuleOptions extends HsmOptions {
  /** Where the signer logs connects, failures and reconnects; default: Nest's Logger. */
  logger?: HsmLogger;
}

export interface HsmModuleAsyncOptions extends Pick<ModuleMetadata, 'imports'>, Pick<FactoryProvider<HsmModuleOptions>, 'inject' | 'useFactory'> {}

const HSM_MODULE_OPTIONS = Symbol('HSM_MODULE_OPTIONS');

/**
 * Provides the `Signer` port (token signatures with JWT_KEY) and the `KeyStore` port (CA key
 * pairs), both served by one `Pkcs11Hsm` connected at boot: a misconfigured HSM stops the
 * application from starting (DECISIONS 12). Global, since one process owns one PKCS#11 module
 * (pkcs11.md rule 4). The HSM is closed in `onApplicationShutdown`, so the app must call
 * `enableShutdownHooks()` (or `close()`) for the drain-then-finalize order to run.
 */
@Global()
@Module({})
export class HsmModule implements OnApplicationShutdown {
  constructor(@Inject(Pkcs11Hsm) private readonly hsm: Pkcs11Hsm) {}

  static forRootAsync(options: HsmModuleAsyncOptions): DynamicModule {
    return {
      module: HsmModule,
      global: true,
      imports: options.imports ?? [],
      providers: [
        { provide: HSM_MODULE_OPTIONS, inject: options.inject ?? [], useFactory: options.useFactory },
        {
          provide: Pkcs11Hsm,
          inject: [HSM_MODULE_OPTIONS],
          useFactory: ({ logger, ...hsm }: HsmModuleOptions) => Pkcs11Hsm.connect(hsm, logger ?? nestLogger()),
        },
        { provide: Signer, inject: [Pkcs11Hsm], useFactory: (hsm: Pkcs11Hsm) => new Pkcs11Signer(hsm) },
        { provide: KeyStore, inject: [Pkcs11Hsm], useFactory: (hsm: Pkcs11Hsm) => new Pkcs11KeyStore(hsm) },
      ],
      exports: [Signer, KeyStore],
    };
  }

  async onApplicationShutdown(): Promise<void> {
    await this.hsm.close();
  }
}

/** Nest's Logger takes a message and a context, so structured fields are appended as JSON. */
function nestLogger(): HsmLogger {
  const logger = new Logger('HsmModule');
  const line = (objOrMsg: object | string, msg?: string): string =>
    typeof objOrMsg === 'string' ? objOrMsg : [msg, JSON.stringify(objOrMsg)].filter((part) => part !== undefined).join(' ');
  return {
    info: (objOrMsg, msg) => logger.log(line(objOrMsg, msg)),
    warn: (objOrMsg, msg) => logger.warn(line(objOrMsg, msg)),
    error: (objOrMsg, msg) => logger.error(line(objOrMsg, msg)),
  };
}
