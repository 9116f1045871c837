import { Body, Controller, Delete, Get, Header, HttpCode, Param, Patch, Post, Req } from '@nestjs/common';
import type { SchemaObject } from '@nestjs/swagger';
import { ApiCreatedResponse, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { Audited } from '@app/audit';
import { Actor, ApiJsonBody, AuthorizedBy, CurrentPrincipal, PathFormats, Principal, RequestActor, listResponse, z } from '@app/common';
import { SessionSummary } from '../sessions/sign-in-session.service';
import { SignInSessions } from '../sessions/sign-in-sessions';
import { ListedFactor, OwnSecurityService, RECENT_SIGN_IN_S } from './own-security.service';

const LIST = {
  schemas: { type: 'array', items: { type: 'string' } },
  totalResults: { type: 'integer' },
  startIndex: { type: 'integer' },
  itemsPerPage: { type: 'integer' },
} satisfies Record<string, SchemaObject>;

const FACTOR_SCHEMA = {
  type: 'object',
  required: ['id', 'type', 'name', 'created', 'lastUsed', 'status', 'onCard', 'removable', 'removalRefusal'],
  properties: {
    id: { type: 'string', format: 'uuid', description: "The credential's id" },
    type: { type: 'string', description: 'The credential type: OATH_TOTP (an authenticator app), or another sign-in factor type' },
    name: { type: 'string', description: "The name its person gave it (1-64 characters), or the type's default name" },
    created: { type: 'string', format: 'date-time' },
    lastUsed: { type: 'string', format: 'date-time', nullable: true, description: 'When it last signed the person in; null when it has not yet' },
    status: { type: 'string', enum: ['ISSUED', 'ON_HOLD'], description: 'ON_HOLD: its device is suspended, so it signs nobody in until resumed' },
    onCard: { type: 'boolean', description: 'On a card rather than a software authenticator: the help desk revokes it with the card' },
    removable: { type: 'boolean', description: 'Whether DELETE removes it now' },
    removalRefusal: { type: 'string', nullable: true, description: 'Why it may not be removed (the last factor, or on a card); null when it may' },
  },
} satisfies SchemaObject;

const SESSION_SCHEMA = {
  type: 'object',
  required: ['id', 'current', 'amr', 'authTime', 'created', 'lastSeen', 'idleExpires', 'absoluteExpires', 'sourceAddress', 'userAgent'],
  properties: {
    id: { type: 'string', format: 'uuid' },
    current: { type: 'boolean', description: 'The session this request came with' },
    amr: { type: 'array', items: { type: 'string' }, description: 'How the person signed in (RFC 8176)' },
    authTime: { type: 'string', format: 'date-time', description: 'When the person last proved who they are in it' },
    created: { type: 'string', format: 'date-time' },
    lastSeen: { type: 'string', format: 'date-time' },
    idleExpires: { type: 'string', format: 'date-time' },
    absoluteExpires: { type: 'string', format: 'date-time' },
    sourceAddress: { type: 'string', nullable: true },
    userAgent: { type: 'string', nullable: true },
  },
} satisfies SchemaObject;

const renameBody = z.object({ name: z.string().min(1).max(64) }).strict();

/**
 * A person's own sign-in security, beside the portal's whoami (DECISIONS 14.6): on the
 * credential-management family, where the session cookie counts (11.1), with a person's token too.
 * `own token`: the caller acts on themselves only; another person's factor or session is not found.
 * Adding and removing a factor need a browser session whose sign-in is at most RECENT_SIGN_IN_S old.
 */
@ApiTags('management portal')
@PathFormats({ id: 'uuid', sessionId: 'uuid' })
@AuthorizedBy('own token')
@Controller('credential-management/customer/:org/whoami')
export class OwnSecurityController {
  constructor(
    private readonly security: OwnSecurityService,
    private readonly sessions: SignInSessions,
  ) {}

  @Get('factors')
  @ApiOperation({ summary: 'Your second factors', description: 'Credentials of your wallet that sign you in (an authenticator app, ...), oldest first.' })
  @ApiOkResponse({
    schema: { type: 'object', required: ['totalResults', 'Resources'], properties: { ...LIST, Resources: { type: 'array', items: FACTOR_SCHEMA } } },
  })
  async listFactors(@Param('org') _org: string, @CurrentPrincipal() principal: Principal) {
    const factors = await this.security.listFactors(principal);
    return listResponse(factors.map(presentFactor), factors.length, { startIndex: 1, count: factors.length });
  }

  @Patch('factors/:id')
  @Audited('user.factor.rename')
  @ApiOperation({ summary: 'Rename one of your second factors', description: 'name: 1 to 64 characters, trimmed.' })
  @ApiJsonBody(renameBody, { name: 'Phone (work)' })
  @ApiOkResponse({ schema: FACTOR_SCHEMA })
  async renameFactor(
    @Param('org') _org: string,
    @Param('id') id: string,
    @Body() body: unknown,
    @CurrentPrincipal() principal: Principal,
    @RequestActor() actor: Actor,
  ) {
    return presentFactor(await this.security.renameFactor(principal, id, body, actor));
  }

  @Delete('factors/:id')
  @HttpCode(204)
  @Audited('user.factor.remove', 'device.revoke', 'credential.revoke')
  @ApiOperation({
    summary: 'Remove one of your second factors (revokes it)',
    description: `409 when it is your last one and your account needs a second factor, or when it is on a card; 403 unless this browser session signed in within the last ${RECENT_SIGN_IN_S} seconds.`,
  })
  @ApiNoContentResponse({ description: 'Revoked: it signs nobody in any more.' })
  async removeFactor(
    @Param('org') _org: string,
    @Param('id') id: string,
    @CurrentPrincipal() principal: Principal,
    @RequestActor() actor: Actor,
    @Req() request: FastifyRequest,
  ): Promise<void> {
    await this.security.removeFactor(principal, await this.currentSession(principal, request), id, actor);
  }

  @Post('factor-enrolments')
  // The link is shown once, like an administrator's enrolment link (DECISIONS 14.4): no cache keeps it.
  @Header('Cache-Control', 'no-store')
  @Audited('user.enrolment_link.create')
  @ApiOperation({
    summary: 'Start adding a second factor',
    description: `A one-time link (10 minutes, this browser session only) to the hosted page that enrols the factor, then returns to the portal's Security page. 403 unless this browser session signed in within the last ${RECENT_SIGN_IN_S} seconds.`,
  })
  @ApiCreatedResponse({
    schema: {
      type: 'object',
      required: ['url', 'expiresAt'],
      properties: { url: { type: 'string', description: 'Open it in this browser; shown once' }, expiresAt: { type: 'string', format: 'date-time' } },
    },
  })
  async startAddFactor(@Param('org') _org: string, @CurrentPrincipal() principal: Principal, @RequestActor() actor: Actor, @Req() request: FastifyRequest) {
    const ticket = await this.security.startAddFactor(principal, await this.currentSession(principal, request), actor);
    return { url: ticket.url, expiresAt: ticket.expiresAt.toISOString() };
  }

  @Get('sessions')
  @ApiOperation({ summary: 'Your live browser sessions', description: 'Newest first; `current` marks the one this request came with.' })
  @ApiOkResponse({
    schema: { type: 'object', required: ['totalResults', 'Resources'], properties: { ...LIST, Resources: { type: 'array', items: SESSION_SCHEMA } } },
  })
  async listSessions(@Param('org') _org: string, @CurrentPrincipal() principal: Principal) {
    const sessions = await this.security.listSessions(principal);
    return listResponse(
      sessions.map((session) => presentSession(session, principal.sessionId)),
      sessions.length,
      { startIndex: 1, count: sessions.length },
    );
  }

  @Delete('sessions/:sessionId')
  @HttpCode(204)
  @Audited('sign_in.logout')
  @ApiOperation({ summary: 'End one of your other browser sessions', description: 'The one this request came with ends by signing out (409 here).' })
  @ApiNoContentResponse({ description: 'Ended at once, on every instance.' })
  async endSession(@Param('org') _org: string, @Param('sessionId') sessionId: string, @CurrentPrincipal() principal: Principal, @RequestActor() actor: Actor) {
    await this.security.endSession(principal, sessionId, actor);
  }

  @Delete('sessions')
  @Audited('sign_in.logout')
  @ApiOperation({ summary: 'Sign out everywhere else', description: 'Ends every live session of yours but the one this request came with.' })
  @ApiOkResponse({ schema: { type: 'object', required: ['endedSessions'], properties: { endedSessions: { type: 'integer' } } } })
  async endOtherSessions(@Param('org') _org: string, @CurrentPrincipal() principal: Principal, @RequestActor() actor: Actor) {
    return { endedSessions: (await this.security.endOtherSessions(principal, actor)).length };
  }

  /** The browser session the request came with (the bearer guard authenticated it), or null for a token. */
  private async currentSession(principal: Principal, request: FastifyRequest) {
    return principal.sessionId ? await this.sessions.fromRequest(request) : null;
  }
}

function presentFactor(factor: ListedFactor) {
  return {
    id: factor.id,
    type: factor.type,
    name: factor.name,
    created: factor.created.toISOString(),
    lastUsed: factor.lastUsed?.toISOString() ?? null,
    status: factor.status,
    onCard: factor.onCard,
    removable: factor.removable,
    removalRefusal: factor.removalRefusal,
  };
}

function presentSession(session: SessionSummary, currentId: string | undefined) {
  return {
    id: session.id,
    current: session.id === currentId,
    amr: session.amr,
    authTime: session.authTime.toISOString(),
    created: session.createdAt.toISOString(),
    lastSeen: session.lastSeenAt.toISOString(),
    idleExpires: session.idleExpiresAt.toISOString(),
    absoluteExpires: session.absoluteExpiresAt.toISOString(),
    sourceAddress: session.sourceAddress,
    userAgent: session.userAgent,
  };
}
