import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { Clock } from '@app/common';
import { AppConfig } from '@app/config';
import { LOGGER, Logger } from '@app/observability';
import { BackchannelRequestRepository } from '../backchannel/backchannel-request.repository';
import { EXPIRED_GRACE_S } from '../backchannel/backchannel-authentication.service';
import { LockoutService } from '../clients/lockout.service';
import { SignInSessionService } from '../sessions/sign-in-session.service';
import { TokenRepository } from './token.repository';
import { AuthorizationGrantRepository } from '../oidc/authorization-grant.repository';
import { PasskeyCeremonies } from '../sign-in/passkeys/passkey-ceremonies';

/**
 * Deletes expired token rows, assertion jtis and lockout counters (DECISIONS 3.4), browser sessions
 * 30 days past their absolute expiry (DECISIONS 14.2), and CIBA requests that expired more than
 * EXPIRED_GRACE_S ago (DECISIONS 16), and expired WebAuthn challenges (DECISIONS 14.5), every PURGE_INTERVAL_S.
 */
@Injectable()
export class PurgeJob implements OnApplicationBootstrap, OnApplicationShutdown {
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly tokens: TokenRepository,
    private readonly grants: AuthorizationGrantRepository,
    private readonly lockout: LockoutService,
    private readonly sessions: SignInSessionService,
    private readonly backchannel: BackchannelRequestRepository,
    private readonly ceremonies: PasskeyCeremonies,
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

  async runOnce(): Promise<{
    tokens: number;
    jtis: number;
    counters: number;
    sessions: number;
    backchannelRequests: number;
    grants: number;
    challenges: number;
  }> {
    try {
      const purged = await this.tokens.purgeExpired(this.clock.now());
      const counters = await this.lockout.purgeExpired();
      const sessions = await this.sessions.purgeExpired();
      const backchannelRequests = await this.backchannel.purgeExpired(EXPIRED_GRACE_S);
      // Authorization grants past their keeping time, with their refresh tokens (DECISIONS 15.7).
      const grants = await this.grants.purgeExpired(this.clock.now());
      const challenges = await this.ceremonies.purgeExpired();
      if (purged.tokens + purged.jtis + counters + sessions + backchannelRequests + grants + challenges > 0) {
        this.logger.info({ ...purged, counters, sessions, backchannelRequests, grants, challenges }, 'purged expired token rows');
      }
      return { ...purged, counters, sessions, backchannelRequests, grants, challenges };
    } catch (error) {
      this.logger.error({ err: error }, 'purge of expired token rows failed; will retry');
      return { tokens: 0, jtis: 0, counters: 0, sessions: 0, backchannelRequests: 0, grants: 0, challenges: 0 };
    }
  }
}
