import { Controller, Get, Res } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { Public } from '@app/common';
import { Signer } from '@app/hsm';
import { Database, DatabaseLiveness } from '@app/persistence';
import { ShutdownState } from './shutdown';

/** Liveness and readiness (DECISIONS 13): ready once the service can issue tokens. */
@ApiTags('operations')
@Public()
@Controller('health')
export class HealthController {
  constructor(
    private readonly db: Database,
    private readonly databaseLiveness: DatabaseLiveness,
    private readonly signer: Signer,
    private readonly shutdown: ShutdownState,
  ) {}

  /**
   * Green through database and HSM outages (the service recovers by itself); red only when the
   * embedded PostgreSQL this process runs has not started again within EMBEDDED_PG_RESTART_TIMEOUT_S,
   * which a restart of the service may cure (docs/decisions.md, "Faults").
   */
  @Get('live')
  live(@Res({ passthrough: true }) reply: FastifyReply) {
    if (this.databaseLiveness.isLive()) return { status: 'ok' };
    reply.status(503);
    return { status: 'unavailable', checks: { embeddedDatabase: 'down' } };
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
