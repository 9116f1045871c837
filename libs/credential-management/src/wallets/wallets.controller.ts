import { Audited, NotAudited } from '@app/audit';
import { Body, Controller, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Permission } from '@app/auth';
import {
  Actor,
  CurrentPrincipal,
  IfMatch,
  IfMatchHeader,
  PATCH_OP_SCHEMA,
  PathFormats,
  Principal,
  RequestActor,
  RequirePermission,
  ScimMediaTypes,
  credentialManagementPaths,
  listResponse,
  projectResource,
  projectionFromQuery,
  searchFromBody,
  ApiScimResponse,
  ApiSearchBody,
} from '@app/common';
import { WalletPresenter } from './wallet.presenter';
import { WALLET_SEARCH_DEFINITION } from './wallet.schema';
import { WalletService } from './wallet.service';

/** The Wallet resource (DECISIONS 5.2: wallet.read, wallet.update, wallet.action, wallet.search). */
@ApiTags('credential management: wallets')
@ApiBearerAuth()
@PathFormats({ id: 'uuid' })
@Controller(credentialManagementPaths('Wallet'))
export class WalletsController {
  constructor(
    private readonly wallets: WalletService,
    private readonly presenter: WalletPresenter,
  ) {}

  @Post('.search')
  @NotAudited('a search (RFC 7644 3.4.3) changes nothing')
  @HttpCode(200)
  @ScimMediaTypes()
  @RequirePermission(Permission.WalletSearch)
  @ApiSearchBody('owner.display eq "jane.doe"')
  @ApiOperation({ summary: 'Search wallets with a SCIM SearchRequest (status, notes, owner.value, owner.display, meta)' })
  @ApiScimResponse(WALLET_SEARCH_DEFINITION, { multiValued: ['devices', 'credentials'], list: true })
  async search(@CurrentPrincipal() principal: Principal, @Body() body: unknown) {
    const search = searchFromBody(body, WALLET_SEARCH_DEFINITION);
    const { views, total } = await this.wallets.search(principal, search);
    return listResponse(
      views.map((view) => projectResource(this.presenter.wallet(view), WALLET_SEARCH_DEFINITION, search)),
      total,
      search.page,
    );
  }

  @Get(':id')
  @ScimMediaTypes()
  @RequirePermission(Permission.WalletRead)
  @ApiOperation({ summary: 'Read a wallet' })
  @ApiScimResponse(WALLET_SEARCH_DEFINITION, { multiValued: ['devices', 'credentials'] })
  async get(@CurrentPrincipal() principal: Principal, @Param('id') id: string, @Query() query: Record<string, unknown>) {
    const projection = projectionFromQuery(query, WALLET_SEARCH_DEFINITION);
    return projectResource(this.presenter.wallet(await this.wallets.get(principal, id)), WALLET_SEARCH_DEFINITION, projection);
  }

  @Patch(':id')
  @Audited('wallet.update')
  @ScimMediaTypes()
  @RequirePermission(Permission.WalletUpdate)
  @ApiOperation({ summary: "Change a wallet's notes (RFC 7644 PatchOp); other attributes are read-only" })
  @ApiBody({
    schema: { type: 'object', example: { schemas: [PATCH_OP_SCHEMA], Operations: [{ op: 'replace', path: 'notes', value: 'Card left at the front desk' }] } },
  })
  @ApiScimResponse(WALLET_SEARCH_DEFINITION, { multiValued: ['devices', 'credentials'] })
  async patch(
    @CurrentPrincipal() principal: Principal,
    @RequestActor() actor: Actor,
    @Param('id') id: string,
    @Body() body: unknown,
    @IfMatchHeader() ifMatch: IfMatch | undefined,
  ) {
    return this.presenter.wallet(await this.wallets.patch(principal, id, body, actor, ifMatch));
  }

  @Post(':id/suspend')
  @Audited('wallet.suspend', 'device.suspend', 'credential.suspend', 'certificate.hold', 'crl.publish')
  @HttpCode(200)
  @ScimMediaTypes({ acceptForm: true })
  @RequirePermission(Permission.WalletAction)
  @ApiOperation({ summary: 'Suspend a wallet: every ISSUED device of it goes ON_HOLD with the reason' })
  @ApiBody({ schema: { type: 'object', properties: { reason: { type: 'string', enum: ['LOST', 'STOLEN', 'DAMAGED', 'FORGOTTEN'] } }, required: ['reason'] } })
  @ApiScimResponse(WALLET_SEARCH_DEFINITION, { multiValued: ['devices', 'credentials'] })
  async suspend(@CurrentPrincipal() principal: Principal, @RequestActor() actor: Actor, @Param('id') id: string, @Body() body: unknown) {
    return this.presenter.wallet(await this.wallets.suspend(principal, id, body, actor));
  }

  @Post(':id/resume')
  @Audited('wallet.resume', 'device.resume', 'credential.resume', 'certificate.release', 'crl.publish')
  @HttpCode(200)
  @ScimMediaTypes({ acceptForm: true })
  @RequirePermission(Permission.WalletAction)
  @ApiOperation({ summary: 'Resume a wallet: every ON_HOLD device of it is ISSUED again' })
  @ApiScimResponse(WALLET_SEARCH_DEFINITION, { multiValued: ['devices', 'credentials'] })
  async resume(@CurrentPrincipal() principal: Principal, @RequestActor() actor: Actor, @Param('id') id: string, @Body() body: unknown) {
    return this.presenter.wallet(await this.wallets.resume(principal, id, body, actor));
  }
}
