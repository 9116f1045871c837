import { Injectable } from '@nestjs/common';
import { randomBytes, randomUUID } from 'node:crypto';
import { AuditLog } from '@app/audit';
import { DataCipher, DomainError, OAuthError, RequestOrigin, notFound } from '@app/common';
import { AppConfig } from '@app/config';
import { SecretHasher, USER_NAME_PATTERN, UserRepository, UserRow, backchannelSettingsOf } from '@app/accounts';
import { Database } from '@app/persistence';
import { ClaimedIdentities, claimed } from '../clients/claimed-identity';
import { AuthenticatedClient } from '../clients/client-authenticator.service';
import { SignInFactorPolicy } from '../grants/sign-in-factor.policy';
import { TokenResponse, TokenService } from '../tokens/token.service';
import { ApprovalDevices } from './approval-devices';
import { BackchannelPing, sealPing } from './backchannel-ping';
import { BackchannelRequestRepository, BackchannelRequestRow } from './backchannel-request.repository';

export const CIBA_GRANT = 'urn:openid:params:grant-type:ciba';

/** CIBA Core 1.0 section 7.3: what the backchannel authentication endpoint answers. */
export interface BackchannelAuthenticationResponse {
  auth_req_id: string;
  expires_in: number;
  interval: number;
}

/** At most this many characters of a binding message (DECISIONS 16): a phone shows it whole, on one screen. */
export const BINDING_MESSAGE_MAX = 64;
/** Letters and marks of any script, digits, the space and common punctuation: no control, format or line-breaking characters. */
const BINDING_MESSAGE = /^[\p{L}\p{M}\p{N} .,:;!?'"()#/+\-_@&%*=]+$/u;
/**
 * A combining mark belongs to the letter or digit before it: one at the start or after a space or
 * punctuation draws itself over whatever the phone shows next to the message, and a stack of more
 * than four is no script's writing (read on the NFC form, where precomposed letters are letters).
 */
const STRAY_MARKS = /(^|[^\p{L}\p{N}\p{M}])\p{M}|\p{M}{5}/u;
/** A bearer token as RFC 6750 2.1 spells it (b64token), bounded. */
const NOTIFICATION_TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;
const NOTIFICATION_TOKEN_MAX = 1024;
const SCOPE_MAX = 1000;
/** Live pending requests one person may have at once (of all clients): beyond, 429 until the first expires. */
export const MAX_PENDING_PER_PERSON = 5;
/** Expired requests are kept this long, so that a late poll hears expired_token rather than invalid_grant. */
export const EXPIRED_GRACE_S = 600;

/** A request as the person's authenticator app is shown it. */
export interface PendingApproval {
  id: string;
  org: string;
  userId: string;
  clientId: string;
  scope: string;
  bindingMessage: string | null;
  state: 'pending' | 'approved' | 'denied' | 'expired';
  createdAt: Date;
  expiresAt: Date;
}

/** Raised inside the request's transaction when the person has no device to ask: rolls the request back. */
class NoApprovalDevice extends Error {}

/** Raised inside the request's transaction when the person has too many pending requests. */
class TooManyPending extends Error {
  constructor(readonly retryAfterS: number) {
    super('too many pending requests');
  }
}

/**
 * OpenID Client-Initiated Backchannel Authentication (CIBA Core 1.0), poll and ping modes (DECISIONS
 * 16): a system account enabled for it asks for a person by login_hint; the person's authenticator
 * apps are asked (ApprovalDevices, in the request's transaction); the person approves or denies by a
 * signature the app makes (checked by delivery-gateway, which then calls `decide`); the client
 * collects the person's tokens at the token endpoint, once.
 */
@Injectable()
export class BackchannelAuthentication {
  constructor(
    private readonly requests: BackchannelRequestRepository,
    private readonly devices: ApprovalDevices,
    private readonly users: UserRepository,
    private readonly factors: SignInFactorPolicy,
    private readonly hasher: SecretHasher,
    private readonly cipher: DataCipher,
    private readonly tokens: TokenService,
    private readonly ping: BackchannelPing,
    private readonly audit: AuditLog,
    private readonly identities: ClaimedIdentities,
    private readonly db: Database,
    private readonly config: AppConfig,
  ) {}

  /** CIBA 7.1: the authentication request of an authenticated client. */
  async initiate(client: AuthenticatedClient, params: Record<string, string>, origin: RequestOrigin): Promise<BackchannelAuthenticationResponse> {
    const { account } = client;
    const settings = enabledSettings(client);
    const request = readRequest(params, settings.tokenDeliveryMode, this.config.backchannelRequestLifetimeS);
    const org = account.org_id;
    const person = USER_NAME_PATTERN.test(request.loginHint) ? await this.users.findByUserName(org, request.loginHint) : undefined;
    const refuse = async (reason: string, error: OAuthError, userId?: string): Promise<never> => {
      await this.audit.record({
        org,
        actor: account.client_id,
        action: 'backchannel.request_refused',
        // The login_hint is named only when it is a user of the organization (ClaimedIdentities, DECISIONS 11).
        target: this.identities.recorded(claimed(request.loginHint, person !== undefined)),
        outcome: 'failure',
        ...origin,
        details: { reason, ...(userId ? { userId } : {}) },
      });
      throw error;
    };
    if (!person || person.disabled) {
      return refuse('unknownUser', new OAuthError('unknown_user_id', 'No enabled user of this organization has the userName given in login_hint.', 400));
    }
    const refusal = this.factors.refusal(person, 'authenticator');
    if (refusal) return refuse('operator', new OAuthError('access_denied', refusal, 403), person.id);

    const authReqId = randomBytes(32).toString('base64url');
    const id = randomUUID();
    const pingSealed =
      settings.tokenDeliveryMode === 'ping'
        ? sealPing(this.cipher, id, { endpoint: settings.clientNotificationEndpoint!, clientNotificationToken: request.notificationToken!, authReqId })
        : null;
    const interval = this.config.backchannelPollIntervalS;
    try {
      await this.db.transaction(async (tx) => {
        const inserted = await this.requests.insert(
          {
            id,
            orgId: org,
            accountId: account.id,
            clientId: account.client_id,
            userId: person.id,
            authReqIdHash: this.hasher.hash(authReqId),
            scope: request.scope,
            bindingMessage: request.bindingMessage,
            deliveryMode: settings.tokenDeliveryMode,
            pingSealed,
            intervalS: interval,
            lifetimeS: request.expiresIn,
          },
          MAX_PENDING_PER_PERSON,
          tx,
        );
        if (!('created' in inserted)) throw new TooManyPending(inserted.retryAfterS);
        const row = inserted.created;
        const asked = await this.devices.ask(
          { org, userId: person.id, requestId: id, clientId: account.client_id, bindingMessage: request.bindingMessage, expiresAt: row.expires_at },
          tx,
        );
        if (asked === 0) throw new NoApprovalDevice();
        await this.audit.record(
          {
            org,
            actor: account.client_id,
            action: 'backchannel.request',
            target: person.user_name,
            outcome: 'success',
            ...origin,
            details: { requestId: id, deliveryMode: settings.tokenDeliveryMode, devices: asked, expiresAt: row.expires_at },
          },
          tx,
        );
      });
    } catch (error) {
      if (error instanceof TooManyPending) {
        return refuse(
          'tooManyPending',
          new OAuthError(
            'temporarily_unavailable',
            `${person.user_name} already has ${MAX_PENDING_PER_PERSON} requests waiting for approval: retry once one of them is decided or expired.`,
            429,
            { 'Retry-After': String(error.retryAfterS) },
          ),
          person.id,
        );
      }
      if (!(error instanceof NoApprovalDevice)) throw error;
      return refuse(
        'noAuthenticator',
        OAuthError.invalidRequest(
          `${person.user_name} has no authenticator app to approve on: the person registers one first (POST /Self/Authenticators, CREDENTIAL-MANAGEMENT.md "Authenticators").`,
        ),
        person.id,
      );
    }
    return { auth_req_id: authReqId, expires_in: request.expiresIn, interval };
  }

  /** CIBA 10.1 and 11: the token endpoint's `urn:openid:params:grant-type:ciba`, polled by the client that asked. */
  async redeem(client: AuthenticatedClient, authReqId: string | undefined, origin: RequestOrigin): Promise<TokenResponse> {
    // A client whose registration was removed since it asked collects nothing more (CIBA 11, unauthorized_client).
    enabledSettings(client);
    if (!authReqId) throw OAuthError.invalidRequest(`The ${CIBA_GRANT} grant needs the auth_req_id parameter.`);
    const unknown = OAuthError.invalidGrant('auth_req_id is unknown, or its request expired long ago: start a new backchannel authentication request.');
    if (authReqId.length > 256) throw unknown;
    const polled = await this.requests.poll(client.account.org_id, this.hasher.hash(authReqId), client.account.id);
    if (!polled) throw unknown;
    const { row, counted, claimed } = polled;
    if (row.account_id !== client.account.id) throw OAuthError.invalidGrant('auth_req_id was issued to another client.');
    if (row.state === 'issued') throw OAuthError.invalidGrant('The tokens of this auth_req_id were issued already: an auth_req_id is used once.');
    if (row.state === 'denied') throw new OAuthError('access_denied', 'The person denied the request on their authenticator app.', 400);
    if (row.expired)
      throw new OAuthError('expired_token', 'The request expired before the person approved it: start a new backchannel authentication request.', 400);
    if (row.state === 'pending') {
      if (!counted) {
        throw new OAuthError('slow_down', `Polled before the interval of ${row.interval_s} s had passed since the last poll: wait longer between polls.`, 400);
      }
      throw new OAuthError('authorization_pending', 'The person has not yet approved the request on their authenticator app.', 400);
    }
    if (!claimed) throw OAuthError.invalidGrant('The tokens of this auth_req_id were issued already: an auth_req_id is used once.');
    try {
      const person = await this.users.findInOrg(row.org_id, row.user_id);
      if (!person || person.disabled) throw OAuthError.invalidGrant('The person this request was for is disabled or no longer exists.');
      // The person's role may have changed since the request: the factor rule is asked again (DECISIONS 3.5).
      const refusal = this.factors.refusal(person, 'authenticator');
      if (refusal) throw new OAuthError('access_denied', refusal, 400);
      return await this.tokens.issueForApprovedPerson(person, client, { authTime: row.decided_at! }, origin);
    } catch (error) {
      // Nothing was issued (the HSM or the database failed): the client's next poll tries again.
      if (!(error instanceof OAuthError)) await this.requests.unclaim(row.org_id, row.id).catch(() => undefined);
      throw error;
    }
  }

  /** A request as the person's authenticator app reads it; undefined when there is none with this id for this person. */
  async forApproval(org: string, requestId: string, userId: string): Promise<PendingApproval | undefined> {
    const row = await this.requests.find(org, requestId);
    if (!row || row.user_id !== userId) return undefined;
    return approvalOf(row);
  }

  /**
   * The person's decision, already proven by the signature of one of their authenticator apps
   * (delivery-gateway checks it): once, across instances. Approving after expiry, or deciding a
   * request decided before, is a 409 saying so. A ping client is notified once this commits.
   */
  async decide(
    org: string,
    requestId: string,
    decider: { userId: string; authenticatorId: string },
    decision: 'approve' | 'deny',
    origin: RequestOrigin,
  ): Promise<PendingApproval> {
    const person = await this.users.findInOrg(org, decider.userId);
    if (!person) throw notFound(`No backchannel authentication request "${requestId}" for this authenticator's person.`);
    const decided = await this.db.transaction(async (tx) => {
      const row = await this.requests.decide(org, requestId, decider.userId, decision === 'approve' ? 'approved' : 'denied', decider.authenticatorId, tx);
      if (!row) return undefined;
      await this.audit.record(
        {
          org,
          actor: person.user_name,
          action: decision === 'approve' ? 'backchannel.approve' : 'backchannel.deny',
          target: row.client_id,
          outcome: 'success',
          ...origin,
          details: { requestId: row.id, authenticatorId: decider.authenticatorId },
        },
        tx,
      );
      if (row.delivery_mode === 'ping') {
        // Off the app's answer: the ping's retries must not hold it.
        tx.afterCommit(async () => void this.ping.send(row));
      }
      return row;
    });
    if (decided) return approvalOf(decided);
    throw await this.whyUndecided(org, requestId, person);
  }

  private async whyUndecided(org: string, requestId: string, person: UserRow): Promise<DomainError> {
    const row = await this.requests.find(org, requestId);
    if (!row || row.user_id !== person.id) return notFound(`No backchannel authentication request "${requestId}" for this authenticator's person.`);
    if (row.state === 'pending' && row.expired) {
      return new DomainError(
        'CONFLICT',
        `The request expired at ${row.expires_at.toISOString()}: it can no longer be approved or denied; the client starts a new one.`,
      );
    }
    const decided = row.state === 'denied' ? 'denied' : 'approved';
    return new DomainError('CONFLICT', `The request was ${decided} already (a request is decided once): nothing changed.`);
  }
}

/** The client's CIBA registration; unauthorized_client when the system account is not (or no longer) enabled for CIBA. */
function enabledSettings({ account }: AuthenticatedClient) {
  const settings = backchannelSettingsOf(account);
  if (!settings) {
    throw new OAuthError(
      'unauthorized_client',
      `${account.client_id} is not enabled for CIBA: an administrator sets backchannelAuthentication {tokenDeliveryMode: "poll" | "ping"} on the system account.`,
      400,
    );
  }
  return settings;
}

function approvalOf(row: BackchannelRequestRow): PendingApproval {
  const state = row.state === 'issued' ? 'approved' : row.state === 'pending' && row.expired ? 'expired' : row.state;
  return {
    id: row.id,
    org: row.org_id,
    userId: row.user_id,
    clientId: row.client_id,
    scope: row.scope,
    bindingMessage: row.binding_message,
    state,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
  };
}

interface ReadRequest {
  loginHint: string;
  scope: string;
  bindingMessage: string | null;
  notificationToken?: string;
  expiresIn: number;
}

/** The parameters of CIBA 7.1, each checked with an error that says what to send instead. */
function readRequest(params: Record<string, string>, mode: 'poll' | 'ping', maxLifetimeS: number): ReadRequest {
  if (params.request !== undefined)
    throw OAuthError.invalidRequest('Signed authentication requests (the request parameter) are not supported: send the parameters in the form.');
  if (params.id_token_hint !== undefined || params.login_hint_token !== undefined) {
    throw OAuthError.invalidRequest(
      "Only login_hint (the person's userName) identifies the person here; id_token_hint and login_hint_token are not supported.",
    );
  }
  if (params.user_code !== undefined) throw OAuthError.invalidRequest('user_code is not supported (backchannel_user_code_parameter_supported is false).');
  const loginHint = params.login_hint;
  if (!loginHint) throw OAuthError.invalidRequest('login_hint is required: the userName of the person who approves.');
  const scope = params.scope;
  if (scope === undefined || scope.length > SCOPE_MAX || !scope.split(' ').includes('openid')) {
    throw new OAuthError('invalid_scope', `scope is required, at most ${SCOPE_MAX} characters, and must include "openid" (CIBA 7.1).`, 400);
  }
  let bindingMessage: string | null = null;
  if (params.binding_message !== undefined) {
    const text = params.binding_message;
    if ([...text].length > BINDING_MESSAGE_MAX || !BINDING_MESSAGE.test(text) || text.trim() !== text || text.includes('  ')) {
      throw new OAuthError(
        'invalid_binding_message',
        `binding_message must be 1-${BINDING_MESSAGE_MAX} characters of letters, digits, single spaces and the punctuation . , : ; ! ? ' " ( ) # / + - _ @ & % * =, without leading or trailing spaces.`,
        400,
      );
    }
    const composed = text.normalize('NFC');
    if (!/[\p{L}\p{N}]/u.test(composed) || STRAY_MARKS.test(composed)) {
      throw new OAuthError(
        'invalid_binding_message',
        'binding_message must contain a letter or digit, and each combining mark (at most four in a row) must follow a letter or digit it belongs to.',
        400,
      );
    }
    bindingMessage = text;
  }
  let notificationToken: string | undefined;
  if (mode === 'ping') {
    notificationToken = params.client_notification_token;
    if (!notificationToken || notificationToken.length > NOTIFICATION_TOKEN_MAX || !NOTIFICATION_TOKEN.test(notificationToken)) {
      throw OAuthError.invalidRequest(
        `client_notification_token is required for a ping client: a bearer token (RFC 6750 b64token) of 1-${NOTIFICATION_TOKEN_MAX} characters, sent back in the ping's Authorization header.`,
      );
    }
  }
  let expiresIn = maxLifetimeS;
  if (params.requested_expiry !== undefined) {
    if (!/^[1-9][0-9]{0,8}$/.test(params.requested_expiry)) throw OAuthError.invalidRequest('requested_expiry must be a positive whole number of seconds.');
    expiresIn = Math.min(Number(params.requested_expiry), maxLifetimeS);
  }
  return { loginHint, scope, bindingMessage, notificationToken, expiresIn };
}
