import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { AppConfig } from '@app/config';
import { LOGGER, Logger } from '@app/observability';
import { ContentRequestService } from './content-request.service';

/**
 * Expires open content requests past their expiresAt every CONTENT_REQUEST_SWEEP_S, releasing the
 * devices they bound (a read of one expires it at once; the sweep frees the devices nobody reads).
 * Each request is expired under its row lock, so instances sweeping together expire each once.
 */
@Injectable()
export class ContentRequestSweepJob implements OnApplicationBootstrap, OnApplicationShutdown {
  private timer?: NodeJS.Timeout;
  private running?: Promise<number>;

  constructor(
    private readonly requests: ContentRequestService,
    private readonly config: AppConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => void this.runOnce(), this.config.contentRequestSweepS * 1000);
    this.timer.unref();
  }

  /** A sweep under way finishes before the pool closes. */
  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  /** One sweep (a sweep still running is not started twice); answers how many requests it expired. */
  runOnce(): Promise<number> {
    this.running ??= this.sweep().finally(() => (this.running = undefined));
    return this.running;
  }

  private async sweep(): Promise<number> {
    try {
      const expired = await this.requests.expireOverdue();
      if (expired > 0) this.logger.info({ expired }, 'expired overdue content requests');
      return expired;
    } catch (error) {
      this.logger.error({ err: error }, 'expiring overdue content requests failed; will retry');
      return 0;
    }
  }
}
