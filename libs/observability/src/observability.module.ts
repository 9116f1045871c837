import { DynamicModule, Global, Module } from '@nestjs/common';
import type { Logger } from 'pino';
import { LOGGER } from './logger';
import { Metrics } from './metrics';

@Global()
@Module({})
export class ObservabilityModule {
  static forRoot(logger: Logger, metrics: Metrics): DynamicModule {
    return {
      module: ObservabilityModule,
      providers: [
        { provide: LOGGER, useValue: logger },
        { provide: Metrics, useValue: metrics },
      ],
      exports: [LOGGER, Metrics],
    };
  }
}
