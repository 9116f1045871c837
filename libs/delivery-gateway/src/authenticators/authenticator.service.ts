import { Injectable } from '@nestjs/common';
import { randomBytes, randomUUID } from 'node:crypto';
import { UserRow, UserService } from '@app/accounts';
import { OperatorDependentPolicy } from '@app/auth';
import { Actor, AuditLog, byActor } from '@app/audit';
import {
  Clock,
  DomainError,
  IfMatch,
  Principal,
  applyPatch,
  forbidden,
  invalidValue,
  notFound,
  parseBody,
  preconditionFailed,
  uniqueness,
  z,
  isUuid,
} from '@app/common';
import { PG_UNIQUE_VIOLATION, Transaction, isPgError } from '@app/persistence';
import { parsePublicKey, registrationSigningInput, verifiesEs256 } from './authenticator-key';
import { AuthenticatorRepository, AuthenticatorRow } from './authenticator.repository';
import { AUTHENTICATOR_SCHEMA, displayName, registerAuthenticatorSchema } from './authenticator.schema';

/** How long a registration challenge can be used (CREDENTIAL-MANAGEMENT.md "Authenticators"). */
export const CHALLENGE_LIFETIME_S = 300;

/** The person whose authenticators a route works on: the caller itself (Self) or a user an operator reaches. */
export interface Holder {
  orgId: string;
  userId: string;
  /** A disabled person gets no authenticator. */
  disabled: boolean;
  /** Where its authenticators are shown: under Self or under the user. */
  via: 'self' | 'user';
}

export interface Challenge {
  challenge: string;
  signingInput: string;
  expiresAt: Date;
}

const renameSchema = z.object({ displayName }).strict();
const challengeRequestSchema = z.object({}).strict();

/**
 * A person's mobile authenticator apps (CREDENTIAL-MANAGEMENT.md "Authenticators"; issue 25 item 1):
 * registration with proof of possession of the key, list, rename and removal, each change under the
 * person's row lock with the grant rules of DECISIONS 5.3 (a disabled person's go with the disable:
 * AuthenticatorRemoval). The push handle is written here and read only by the sender; it is never
 * returned or audited.
 */
@Injectable()
export class AuthenticatorService {
  constructor(
    private readonly authenticators: AuthenticatorRepository,
    private readonly users: UserService,
    private readonly operatorDependent: OperatorDependentPolicy,
    private readonly audit: AuditLog,
    private readonly clock: Clock,
  ) {}

  /** The caller itself: only a user's token has a self (a system account's is refused with what to use instead). */
  self(principal: Principal): Holder {
    if (principal.kind !== 'user') {
      throw forbidden(`/Self is the signed-in user's; "${principal.name}" is a system account. Use a user's token (password or jwt-bearer grant).`);
    }
    return { orgId: principal.org, userId: principal.subjectId, disabled: false, via: 'self' };
  }

  /** A user of the caller's organization that the caller reaches; anything else is 404, as if it did not exist (DECISIONS 2). */
  async user(principal: Principal, userId: string): Promise<Holder> {
    const user: UserRow | undefined = await this.users.find(principal.org, userId);
    if (!user || !this.operatorDependent.canReach(principal, user))
      throw notFound(`User "${userId.slice(0, 64)}" does not exist in organization "${principal.org}".`);
    return { orgId: principal.org, userId: user.id, disabled: user.disabled, via: 'user' };
  }

  /** A challenge takes no body; an empty one (or `{}`) is accepted, anything in it is a 400 naming it (DECISIONS 7). */
  async challenge(holder: Holder, body: unknown): Promise<Challenge> {
    if (body !== undefined) parseBody(challengeRequestSchema, body, 'challenge request');
    if (holder.disabled) throw disabledUser(holder.userId);
    const challenge = randomBytes(32).toString('base64url');
    const now = this.clock.now();
    const expiresAt = new Date(now.getTime() + CHALLENGE_LIFETIME_S * 1000);
    await this.authenticators.addChallenge(holder.orgId, holder.userId, challenge, now, expiresAt);
    return { challenge, signingInput: registrationSigningInput(holder.orgId, holder.userId, challenge), expiresAt };
  }

  /**
   * Registers an app once it has proved that it holds the key: the challenge is taken out first (in
   * its own statement, so it is spent whether or not the rest succeeds), then the signature over this
   * person's signing input is verified, then the row is written under the person's lock.
   */
  async register(holder: Holder, body: unknown, actor: Actor): Promise<AuthenticatorRow> {
    const input = parseBody(registerAuthenticatorSchema, body, 'authenticator');
    const key = parsePublicKey(input.publicKey);
    const expiresAt = await this.authenticators.consumeChallenge(holder.orgId, holder.userId, input.challenge);
    if (expiresAt === undefined) {
      throw invalidValue(
        `Invalid authenticator: challenge "${input.challenge.slice(0, 48)}" is unknown or was used already: get a new one with POST .../Authenticators/.challenge (a challenge registers one app, for the person it was made for).`,
      );
    }
    if (expiresAt.getTime() <= this.clock.now().getTime()) {
      throw invalidValue(
        `Invalid authenticator: the challenge expired at ${expiresAt.toISOString()} (challenges last ${CHALLENGE_LIFETIME_S} s): get a new one and sign it.`,
      );
    }
    if (!verifiesEs256(key.key, registrationSigningInput(holder.orgId, holder.userId, input.challenge), input.signature)) {
      throw invalidValue(
        'Invalid authenticator: the signature does not verify with publicKey over the signingInput of the challenge: sign exactly that text with the private key of publicKey (ES256).',
      );
    }
    try {
      return await this.users.withCredentialLock(holder.orgId, holder.userId, actor, async (user, tx) => {
        if (user.disabled) throw disabledUser(user.id);
        const row = await this.authenticators.insert(
          {
            id: randomUUID(),
            orgId: holder.orgId,
            userId: holder.userId,
            displayName: input.displayName,
            operatingSystem: input.operatingSystem,
            pushHandle: input.pushHandle,
            publicKey: key.jwk,
            thumbprint: key.thumbprint,
            now: this.clock.now(),
          },
          tx,
        );
        await this.record('authenticator.register', row, actor, { operatingSystem: row.operating_system, thumbprint: row.thumbprint }, tx);
        return row;
      });
    } catch (error) {
      if (isPgError(error, PG_UNIQUE_VIOLATION)) {
        throw uniqueness(`This key (thumbprint ${key.thumbprint}) is already registered for this person; remove that authenticator first or use another key.`);
      }
      throw error;
    }
  }

  list(holder: Holder): Promise<AuthenticatorRow[]> {
    return this.authenticators.listOf(holder.orgId, holder.userId);
  }

  async get(holder: Holder, id: string): Promise<AuthenticatorRow> {
    const row = isUuid(id) ? await this.authenticators.find(holder.orgId, holder.userId, id) : undefined;
    if (!row) throw authenticatorNotFound(id);
    return row;
  }

  /** PATCH (RFC 7644 PatchOp) of `displayName`; every other attribute is read-only (400 mutability). */
  async rename(holder: Holder, id: string, body: unknown, actor: Actor, ifMatch?: IfMatch): Promise<AuthenticatorRow> {
    const current = await this.get(holder, id);
    const view = {
      displayName: current.display_name,
      operatingSystem: current.operating_system,
      publicKey: current.public_key,
      thumbprint: current.thumbprint,
      owner: current.user_id,
    };
    const patched = applyPatch(view, body, { coreSchema: AUTHENTICATOR_SCHEMA, extensions: [], attributes: Object.keys(view) });
    const touched = Object.keys(view).filter((key) => key !== 'displayName' && JSON.stringify(patched[key]) !== JSON.stringify(view[key as keyof typeof view]));
    if (touched.length > 0) {
      throw new DomainError(
        'MUTABILITY',
        `Only displayName can be changed with PATCH; ${touched.join(', ')} ${touched.length === 1 ? 'is' : 'are'} read-only (register the app again for another key, operating system or push handle).`,
      );
    }
    const { displayName: name } = parseBody(renameSchema, { displayName: patched.displayName }, 'authenticator');
    return this.users.withCredentialLock(holder.orgId, holder.userId, actor, async (_user, tx) => {
      const row = await this.authenticators.rename(holder.orgId, holder.userId, current.id, name, this.clock.now(), tx);
      if (!row) throw authenticatorNotFound(id);
      // A stale If-Match undoes the rename (the transaction rolls back).
      if (ifMatch && !ifMatch.matches(row.version - 1)) throw preconditionFailed(`Authenticator ${id}`, row.version - 1);
      await this.record('authenticator.rename', row, actor, {}, tx);
      return row;
    });
  }

  async remove(holder: Holder, id: string, actor: Actor, ifMatch?: IfMatch): Promise<void> {
    if (!isUuid(id)) throw authenticatorNotFound(id);
    await this.users.withCredentialLock(holder.orgId, holder.userId, actor, async (_user, tx) => {
      const row = await this.authenticators.remove(holder.orgId, holder.userId, id, tx);
      if (!row) throw authenticatorNotFound(id);
      if (ifMatch && !ifMatch.matches(row.version)) throw preconditionFailed(`Authenticator ${id}`, row.version);
      await this.record('authenticator.remove', row, actor, { thumbprint: row.thumbprint, reason: 'request' }, tx);
    });
  }

  private async record(
    action: 'authenticator.register' | 'authenticator.rename' | 'authenticator.remove',
    row: AuthenticatorRow,
    actor: Actor,
    details: Record<string, unknown>,
    tx: Transaction,
  ): Promise<void> {
    // Never the push handle, and not the display name (it often names the person).
    await this.audit.record({ org: row.org_id, ...byActor(actor), action, target: row.id, outcome: 'success', details: { user: row.user_id, ...details } }, tx);
  }
}

function authenticatorNotFound(id: string): DomainError {
  return notFound(`Authenticator ${id.slice(0, 64)} does not exist.`);
}

function disabledUser(userId: string): DomainError {
  return new DomainError('CONFLICT', `User "${userId}" is disabled: enable the user before registering an authenticator.`);
}
