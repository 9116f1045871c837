import { Audited } from '@app/audit';
import { Body, Controller, Delete, Get, HttpCode, Param, Put } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Actor, ApiJsonBody, CurrentPrincipal, parseBody, Principal, RequestActor, RequireAdministrator } from '@app/common';
import { OidcClientService } from '../oidc-clients/oidc-client.service';
import { AdminPresenter } from './admin.presenter';
import { oidcClientSchema } from './admin.schemas';

/** A system account's settings as a client of the authorization code flow (DECISIONS 15.1). */
@ApiTags('administration')
@ApiBearerAuth()
@RequireAdministrator('organization')
@Controller('admin/v1/organizations/:org/system-accounts/:clientId/oidc-client')
export class OidcClientsController {
  constructor(
    private readonly clients: OidcClientService,
    private readonly presenter: AdminPresenter,
  ) {}

  @Get()
  @ApiOperation({ summary: "Read a system account's OpenID Connect client settings (404 while it is not set up for the authorization code flow)" })
  async get(@Param('org') orgId: string, @Param('clientId') clientId: string) {
    return this.presenter.oidcClient(orgId, clientId, await this.clients.get(orgId, clientId));
  }

  @Put()
  @Audited('oidc_client.configure')
  @ApiOperation({
    summary: 'Set up a system account for the authorization code flow, or replace its settings',
    description:
      'Redirect URIs are matched as exact strings: https, or http on 127.0.0.1, [::1] or localhost. publicClient: PKCE only, no client authentication at the token endpoint (default false). firstParty: no consent asked (default false: the person is asked once per request). refreshTokens: the client gets refresh tokens (default false).',
  })
  @ApiJsonBody(oidcClientSchema, {
    redirectUris: ['https://app.example.com/callback'],
    postLogoutRedirectUris: ['https://app.example.com/'],
    publicClient: false,
    firstParty: true,
    refreshTokens: true,
  })
  async put(
    @CurrentPrincipal() principal: Principal,
    @RequestActor() actor: Actor,
    @Param('org') orgId: string,
    @Param('clientId') clientId: string,
    @Body() body: unknown,
  ) {
    const input = parseBody(oidcClientSchema, body);
    const row = await this.clients.put(
      orgId,
      clientId,
      {
        redirectUris: input.redirectUris,
        postLogoutRedirectUris: input.postLogoutRedirectUris ?? [],
        publicClient: input.publicClient ?? false,
        firstParty: input.firstParty ?? false,
        refreshTokens: input.refreshTokens ?? false,
      },
      actor,
    );
    return this.presenter.oidcClient(orgId, clientId, row);
  }

  @Delete()
  @Audited('oidc_client.remove')
  @HttpCode(204)
  @ApiOperation({ summary: 'Take a system account out of the authorization code flow', description: 'Tokens already issued keep their lifetime.' })
  async remove(
    @CurrentPrincipal() principal: Principal,
    @RequestActor() actor: Actor,
    @Param('org') orgId: string,
    @Param('clientId') clientId: string,
  ): Promise<void> {
    await this.clients.remove(orgId, clientId, actor);
  }
}
