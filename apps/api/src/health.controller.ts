import { Controller, Get, Res } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { Public } from '@app/common';
import { Signer } from '@app/hsm';
import { Database } from '@app/persistence';
import { ShutdownState } from './shutdown';

/** Liveness and readiness (DECISIONS 13): ready once the service can issue tokens. */
@ApiTags('operations')
@Public()
@Controller('health')
export class HealthController {
  constructor(
    private readonly db: Database,
    private readonly signer: Signer,
    private readonly shutdown: ShutdownState,
  ) {}

  @Get('live')
  live() {
    return { status: 'ok' };
  }

  @Get('ready')
  async ready(@Res({ passthrough: true }) reply: FastifyReply) {
    const checks: Record<string, string> = { database: (await this.db.ping()) ? 'ok' : 'down', hsm: this.signer.isReady() ? 'ok' : 'down' };
    // Red first on SIGTERM, so that the load balancer stops sending before the server stops accepting.
    if (this.shutdown.closing) checks.shutdown = 'closing';
    const ready = checks.database === 'ok' && checks.hsm === 'ok' && !this.shutdown.closing;
    reply.status(ready ? 200 : 503);
    if (!ready) reply.header('Retry-After', '5');
    return { status: ready ? 'ok' : 'unavailable', checks };
  }
}
