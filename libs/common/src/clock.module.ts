import { Global, Module } from '@nestjs/common';
import { Clock, SystemClock } from './clock';

/** Provides the system clock; tests override `Clock` with a controllable one. */
@Global()
@Module({ providers: [{ provide: Clock, useClass: SystemClock }], exports: [Clock] })
export class ClockModule {}
