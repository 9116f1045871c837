import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { Clock } from '@app/common';
import { AppConfig } from '@app/config';
import { Metrics } from '@app/observability';
import { AuthenticatedClient } from '../clients/client-authenticator.service';
import { JwsService } from './jws.service';
import { TokenRepository } from './token.repository';

export interface TokenResponse {
  access_token: string;
  id_token: string;
  token_type: 'Bearer';
  expires_in: number;
}

/** Issues the token pair of DECISIONS 3.4: an RFC 9068 access token and an OpenID id_token. */
@Injectable()
export class TokenService {
  constructor(
    private readonly jws: JwsService,
    private readonly tokens: TokenRepository,
    private readonly clock: Clock,
    private readonly config: AppConfig,
    private readonly metrics: Metrics,
  ) {}

  issuer(org: string): string {
    return `${this.config.authBaseUrl}/authentication/customer/${org}`;
  }

  async issueForClient(client: AuthenticatedClient, sourceAddress: string): Promise<TokenResponse> {
    const { account } = client;
    const lifetime = client.orgSettings.accessTokenLifetime ?? this.config.accessTokenLifetimeS;
    const now = this.clock.now();
    const iat = Math.floor(now.getTime() / 1000);
    const exp = iat + lifetime;
    const jti = randomUUID();
    const iss = this.issuer(account.org_id);
    const [accessToken, idToken] = await Promise.all([
      this.jws.sign('at+jwt', {
        iss,
        sub: account.client_id,
        aud: this.config.publicBaseUrl,
        client_id: account.client_id,
        org: account.org_id,
        role: account.role,
        scope: '',
        jti,
        iat,
        exp,
      }),
      this.jws.sign('JWT', { iss, sub: account.client_id, aud: account.client_id, iat, exp, org: account.org_id }),
    ]);
    await this.tokens.recordIssued(
      { jti, orgId: account.org_id, accountId: account.id, issuedAt: new Date(iat * 1000), expiresAt: new Date(exp * 1000), secretId: client.secretId, sourceAddress, method: client.method },
      account.client_id,
    );
    this.metrics.tokensIssued.inc({ method: client.method });
    return { access_token: accessToken, id_token: idToken, token_type: 'Bearer', expires_in: lifetime };
  }
}
