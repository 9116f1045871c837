import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { Clock } from '@app/common';
import { AppConfig } from '@app/config';
import { LOGGER, Logger } from '@app/observability';
import { LockoutService } from '../clients/lockout.service';
import { SignInSessionService } from '../sessions/sign-in-session.service';
import { TokenRepository } from './token.repository';

/**
 * Deletes expired token rows, assertion jtis and lockout counters every PURGE_INTERVAL_S (DECISIONS
 * 3.4), and browser sessions 30 days past their absolute expiry (DECISIONS 14.2).
 */
@Injectable()
export class PurgeJob implements OnApplicationBootstrap, OnApplicationShutdown {
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly tokens: TokenRepository,
    private readonly lockout: LockoutService,
    private readonly sessions: SignInSessionService,
    private readonly clock: Clock,
    private readonly config: AppConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => void this.runOnce(), this.config.purgeIntervalS * 1000);
    this.timer.unref();
  }

  onApplicationShutdown(): void {
    clearInterval(this.timer);
  }

  async runOnce(): Promise<{ tokens: number; jtis: number; counters: number; sessions: number }> {
    try {
      const purged = await this.tokens.purgeExpired(this.clock.now());
      const counters = await this.lockout.purgeExpired();
      const sessions = await this.sessions.purgeExpired();
      if (purged.tokens + purged.jtis + counters + sessions > 0) this.logger.info({ ...purged, counters, sessions }, 'purged expired token rows');
      return { ...purged, counters, sessions };
    } catch (error) {
      this.logger.error({ err: error }, 'purge of expired token rows failed; will retry');
      return { tokens: 0, jtis: 0, counters: 0, sessions: 0 };
    }
  }
}
