import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { AccountsModule } from '@app/accounts';
import { AssertionVerifier } from './clients/assertion-verifier';
import { ClientAuthenticator } from './clients/client-authenticator.service';
import { LockoutService } from './clients/lockout.service';
import { BearerGuard } from './http/bearer.guard';
import { DiscoveryController } from './http/discovery.controller';
import { TokenController } from './http/token.controller';
import { AccessTokenValidator } from './tokens/access-token-validator';
import { JwsService } from './tokens/jws.service';
import { PurgeJob } from './tokens/purge.job';
import { TokenIntrospection } from './tokens/token-introspection.service';
import { TokenRepository } from './tokens/token.repository';
import { TokenService } from './tokens/token.service';

/** The token service, client authentication, and the global bearer guard. */
@Module({
  imports: [AccountsModule],
  controllers: [TokenController, DiscoveryController],
  providers: [
    AssertionVerifier,
    ClientAuthenticator,
    LockoutService,
    AccessTokenValidator,
    JwsService,
    PurgeJob,
    TokenIntrospection,
    TokenRepository,
    TokenService,
    { provide: APP_GUARD, useClass: BearerGuard },
  ],
  exports: [TokenService, JwsService, PurgeJob],
})
export class AuthModule {}
