import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { Audited, NotAudited } from '@app/audit';
import { Permission } from '@app/auth';
import {
  Actor,
  ApiJsonBody,
  ApiSchemaResponse,
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
  scimListSchema,
} from '@app/common';
import { AuthenticatorPresenter } from './authenticator.presenter';
import { AUTHENTICATOR_RESPONSE, AUTHENTICATOR_SCHEMA, CHALLENGE_RESPONSE, registerAuthenticatorSchema } from './authenticator.schema';
import { AuthenticatorService, Holder } from './authenticator.service';

const REGISTRATION_EXAMPLE = {
  schemas: [AUTHENTICATOR_SCHEMA],
  displayName: 'Pixel 9',
  operatingSystem: 'Android',
  pushHandle: 'fcm-registration-token',
  publicKey: { kty: 'EC', crv: 'P-256', x: 'f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU', y: 'x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0' },
  challenge: 'the challenge of POST .../Authenticators/.challenge',
  signature: 'ES256 of signingInput, r||s in base64url',
};
/** A challenge takes no body; `{}` is accepted too. */
const NO_BODY = { required: false, schema: { type: 'object', additionalProperties: false, description: 'No body: send none, or {}.' } } as const;
const RENAME_EXAMPLE = { schemas: [PATCH_OP_SCHEMA], Operations: [{ op: 'replace', path: 'displayName', value: 'Old phone' }] };

/** The routes both controllers share, for the person a route names (CREDENTIAL-MANAGEMENT.md "Authenticators"). */
class AuthenticatorRoutes {
  constructor(
    protected readonly authenticators: AuthenticatorService,
    protected readonly presenter: AuthenticatorPresenter,
  ) {}

  protected async challenge(holder: Holder, body: unknown) {
    return this.presenter.challenge(await this.authenticators.challenge(holder, body));
  }

  protected async register(holder: Holder, body: unknown, actor: Actor, reply: FastifyReply) {
    const row = await this.authenticators.register(holder, body, actor);
    reply.header('Location', this.presenter.location(holder, row.id));
    return this.presenter.authenticator(holder, row);
  }

  protected async list(holder: Holder) {
    return this.presenter.list(holder, await this.authenticators.list(holder));
  }

  protected async read(holder: Holder, id: string) {
    return this.presenter.authenticator(holder, await this.authenticators.get(holder, id));
  }

  protected async rename(holder: Holder, id: string, body: unknown, actor: Actor, ifMatch: IfMatch | undefined) {
    return this.presenter.authenticator(holder, await this.authenticators.rename(holder, id, body, actor, ifMatch));
  }
}

/** `/Self/Authenticators`: the signed-in person's own apps (Device scope, DECISIONS 5.2). */
@ApiTags('credential management: self')
@ApiBearerAuth()
@ScimMediaTypes()
@PathFormats({ id: 'uuid' })
@Controller(credentialManagementPaths('Self'))
export class SelfAuthenticatorsController extends AuthenticatorRoutes {
  constructor(authenticators: AuthenticatorService, presenter: AuthenticatorPresenter) {
    super(authenticators, presenter);
  }

  @Post('Authenticators/.challenge')
  @NotAudited('a challenge is a single-use nonce; the registration that spends it is audited')
  @HttpCode(200)
  @RequirePermission(Permission.SelfAuthenticatorManage)
  @ApiOperation({ summary: 'Get a challenge for your app to sign (single use, 5 minutes)' })
  @ApiBody(NO_BODY)
  @ApiSchemaResponse(CHALLENGE_RESPONSE)
  async getChallenge(@CurrentPrincipal() principal: Principal, @Body() body: unknown) {
    return this.challenge(this.authenticators.self(principal), body);
  }

  @Post('Authenticators')
  @Audited('authenticator.register')
  @RequirePermission(Permission.SelfAuthenticatorManage)
  @ApiOperation({ summary: 'Register your authenticator app: its EC P-256 public key (JWK) and its ES256 signature of the challenge' })
  @ApiJsonBody(registerAuthenticatorSchema, REGISTRATION_EXAMPLE)
  @ApiSchemaResponse(AUTHENTICATOR_RESPONSE, 201)
  async create(@CurrentPrincipal() principal: Principal, @RequestActor() actor: Actor, @Body() body: unknown, @Res({ passthrough: true }) reply: FastifyReply) {
    return this.register(this.authenticators.self(principal), body, actor, reply);
  }

  @Get('Authenticators')
  @RequirePermission(Permission.SelfAuthenticatorRead)
  @ApiOperation({ summary: 'Your authenticator apps' })
  @ApiSchemaResponse(scimListSchema(AUTHENTICATOR_RESPONSE))
  async listOwn(@CurrentPrincipal() principal: Principal) {
    return this.list(this.authenticators.self(principal));
  }

  @Get('Authenticators/:id')
  @RequirePermission(Permission.SelfAuthenticatorRead)
  @ApiOperation({ summary: 'One of your authenticator apps' })
  @ApiSchemaResponse(AUTHENTICATOR_RESPONSE)
  async get(@CurrentPrincipal() principal: Principal, @Param('id') id: string) {
    return this.read(this.authenticators.self(principal), id);
  }

  @Patch('Authenticators/:id')
  @Audited('authenticator.rename')
  @RequirePermission(Permission.SelfAuthenticatorManage)
  @ApiOperation({ summary: 'Rename one of your authenticator apps (RFC 7644 PatchOp on displayName)' })
  @ApiBody({ schema: { type: 'object', example: RENAME_EXAMPLE } })
  @ApiSchemaResponse(AUTHENTICATOR_RESPONSE)
  async patch(
    @CurrentPrincipal() principal: Principal,
    @RequestActor() actor: Actor,
    @Param('id') id: string,
    @Body() body: unknown,
    @IfMatchHeader() ifMatch: IfMatch | undefined,
  ) {
    return this.rename(this.authenticators.self(principal), id, body, actor, ifMatch);
  }

  @Delete('Authenticators/:id')
  @Audited('authenticator.remove')
  @HttpCode(204)
  @RequirePermission(Permission.SelfAuthenticatorManage)
  @ApiOperation({ summary: 'Remove one of your authenticator apps' })
  async remove(
    @CurrentPrincipal() principal: Principal,
    @RequestActor() actor: Actor,
    @Param('id') id: string,
    @IfMatchHeader() ifMatch: IfMatch | undefined,
  ): Promise<void> {
    await this.authenticators.remove(this.authenticators.self(principal), id, actor, ifMatch);
  }
}

/**
 * `/Users/{uid}/Authenticators`: an operator registers, lists, renames and removes a person's apps
 * (user.authenticator.read and .manage, DECISIONS 5.2), for the users it reaches (Operator
 * Dependent: its groups' users; others 404) and may change (DECISIONS 5.3).
 */
@ApiTags('credential management: users')
@ApiBearerAuth()
@ScimMediaTypes()
@PathFormats({ id: 'uuid', authenticatorId: 'uuid' })
@Controller(credentialManagementPaths('Users'))
export class UserAuthenticatorsController extends AuthenticatorRoutes {
  constructor(authenticators: AuthenticatorService, presenter: AuthenticatorPresenter) {
    super(authenticators, presenter);
  }

  @Post(':id/Authenticators/.challenge')
  @NotAudited('a challenge is a single-use nonce; the registration that spends it is audited')
  @HttpCode(200)
  @RequirePermission(Permission.UserAuthenticatorManage)
  @ApiOperation({ summary: "Get a challenge for a person's app to sign (single use, 5 minutes)" })
  @ApiBody(NO_BODY)
  @ApiSchemaResponse(CHALLENGE_RESPONSE)
  async getChallenge(@CurrentPrincipal() principal: Principal, @Param('id') userId: string, @Body() body: unknown) {
    return this.challenge(await this.authenticators.user(principal, userId), body);
  }

  @Post(':id/Authenticators')
  @Audited('authenticator.register')
  @RequirePermission(Permission.UserAuthenticatorManage)
  @ApiOperation({ summary: "Register a person's authenticator app: its EC P-256 public key (JWK) and its ES256 signature of the challenge" })
  @ApiJsonBody(registerAuthenticatorSchema, REGISTRATION_EXAMPLE)
  @ApiSchemaResponse(AUTHENTICATOR_RESPONSE, 201)
  async create(
    @CurrentPrincipal() principal: Principal,
    @RequestActor() actor: Actor,
    @Param('id') userId: string,
    @Body() body: unknown,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    return this.register(await this.authenticators.user(principal, userId), body, actor, reply);
  }

  @Get(':id/Authenticators')
  @RequirePermission(Permission.UserAuthenticatorRead)
  @ApiOperation({ summary: "A person's authenticator apps" })
  @ApiSchemaResponse(scimListSchema(AUTHENTICATOR_RESPONSE))
  async listOf(@CurrentPrincipal() principal: Principal, @Param('id') userId: string) {
    return this.list(await this.authenticators.user(principal, userId));
  }

  @Get(':id/Authenticators/:authenticatorId')
  @RequirePermission(Permission.UserAuthenticatorRead)
  @ApiOperation({ summary: "One of a person's authenticator apps" })
  @ApiSchemaResponse(AUTHENTICATOR_RESPONSE)
  async get(@CurrentPrincipal() principal: Principal, @Param('id') userId: string, @Param('authenticatorId') id: string) {
    return this.read(await this.authenticators.user(principal, userId), id);
  }

  @Patch(':id/Authenticators/:authenticatorId')
  @Audited('authenticator.rename')
  @RequirePermission(Permission.UserAuthenticatorManage)
  @ApiOperation({ summary: "Rename a person's authenticator app (RFC 7644 PatchOp on displayName)" })
  @ApiBody({ schema: { type: 'object', example: RENAME_EXAMPLE } })
  @ApiSchemaResponse(AUTHENTICATOR_RESPONSE)
  async patch(
    @CurrentPrincipal() principal: Principal,
    @RequestActor() actor: Actor,
    @Param('id') userId: string,
    @Param('authenticatorId') id: string,
    @Body() body: unknown,
    @IfMatchHeader() ifMatch: IfMatch | undefined,
  ) {
    return this.rename(await this.authenticators.user(principal, userId), id, body, actor, ifMatch);
  }

  @Delete(':id/Authenticators/:authenticatorId')
  @Audited('authenticator.remove')
  @HttpCode(204)
  @RequirePermission(Permission.UserAuthenticatorManage)
  @ApiOperation({ summary: "Remove a person's authenticator app" })
  async remove(
    @CurrentPrincipal() principal: Principal,
    @RequestActor() actor: Actor,
    @Param('id') userId: string,
    @Param('authenticatorId') id: string,
    @IfMatchHeader() ifMatch: IfMatch | undefined,
  ): Promise<void> {
    await this.authenticators.remove(await this.authenticators.user(principal, userId), id, actor, ifMatch);
  }
}
