import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import {
  type AuthenticationResponseJSON,
  type PublicKeyCredentialCreationOptionsJSON,
  type PublicKeyCredentialRequestOptionsJSON,
  type RegistrationResponseJSON,
  generateAuthenticationOptions,
  generateRegistrationOptions,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
} from '@simplewebauthn/server';
import { Clock } from '@app/common';
import { AppConfig } from '@app/config';
import { Database } from '@app/persistence';
import { NewPasskey, PasskeyCredentials, StoredPasskey } from './passkey-credentials';

/** The platform's key rules for passkeys (DECISIONS 14.5): ES256 and RS256 (COSE -7, -257). */
export const PASSKEY_ALGORITHMS = [-7, -257];
/** How long a ceremony's challenge is good for: longer than a person takes at the authenticator. */
const CHALLENGE_LIFETIME_MS = 5 * 60 * 1000;
/** The longest answer read (an attestation object with an RSA key is a few kilobytes). */
const MAX_RESPONSE = 16_384;

export type Purpose = 'registration' | 'authentication';

/** Why a passkey answer was refused: the audit's reason, and the page's sentence. */
export type PasskeyRefusal =
  | 'malformed'
  | 'challenge'
  | 'origin'
  | 'rp_id'
  | 'user_verification'
  | 'signature'
  | 'unknown_passkey'
  | 'other_user'
  | 'passkey_not_issued'
  | 'cloned_authenticator'
  | 'already_registered'
  | 'algorithm';

export const PASSKEY_MESSAGES: Record<PasskeyRefusal, string> = {
  malformed: 'The passkey answer could not be read. Try again.',
  challenge: 'The passkey answer did not match this sign-in; try again.',
  origin: 'The passkey answer came from another address than this service’s. Open this page at the service’s own address and try again.',
  rp_id: 'The passkey answer was made for another site than this one. Use a passkey made for this service.',
  user_verification: 'Your authenticator did not verify you (PIN, fingerprint or face). Try again and unlock it when it asks.',
  signature: 'The passkey’s signature did not verify. Try again with the same passkey.',
  unknown_passkey: 'This passkey is not registered. Use a passkey you added here, or sign in another way.',
  other_user: 'This passkey belongs to another account. Use your own passkey.',
  passkey_not_issued: 'This passkey has been suspended or revoked. Sign in another way, or ask an administrator.',
  cloned_authenticator:
    'This passkey answered with a signature counter lower than before, which a copied authenticator does, so it was refused. Ask an administrator.',
  already_registered: 'This passkey is registered already. Use another authenticator, or sign in with this one.',
  algorithm: 'This authenticator offers a key type this service does not accept (ES256 or RS256). Use another authenticator.',
};

export type Refused = { ok: false; refusal: PasskeyRefusal };

/** The WebAuthn user handle of a person: 16 bytes derived from their id (no name, nothing a site could link). */
export function userHandleOf(userId: string): string {
  return createHash('sha256').update(`webauthn-user-handle|${userId}`).digest().subarray(0, 16).toString('base64url');
}

/** The browser's pre-session cookie (or a session's id) that binds a challenge to one flow. */
export function bindingOf(flow: string): Buffer {
  return createHash('sha256').update(`webauthn-binding|${flow}`).digest();
}

/**
 * The WebAuthn ceremonies of the hosted pages (DECISIONS 14.5), with @simplewebauthn/server: the
 * relying party is AUTH_BASE_URL's host (its own origins are the expected origins), attestation
 * `none`, ES256 and RS256. Every challenge is a row of `webauthn_challenges` bound to the
 * organization, the purpose, the person (none for a sign-in with a passkey alone) and the flow (the
 * browser's pre-session cookie), good for five minutes, and consumed by one UPDATE before the answer
 * is checked: an answer is checked at most once, on any instance.
 */
@Injectable()
export class PasskeyCeremonies {
  readonly rpId: string;
  private readonly origins: string[];

  constructor(
    config: AppConfig,
    private readonly db: Database,
    private readonly passkeys: PasskeyCredentials,
    private readonly clock: Clock,
  ) {
    this.rpId = new URL(config.authBaseUrl).hostname;
    // The origins at which a browser can use this RP id: the service's own origins whose host is it.
    this.origins = config.authOrigins.filter((origin) => new URL(origin).hostname === this.rpId);
  }

  /** Options to register a new passkey for `user`, its challenge stored for this flow. */
  async registrationOptions(
    orgId: string,
    organizationName: string,
    user: { id: string; userName: string },
    flow: string,
  ): Promise<PublicKeyCredentialCreationOptionsJSON> {
    const challenge = await this.newChallenge(orgId, user.id, 'registration', flow);
    const owned = await this.passkeys.owned(orgId, user.id);
    return generateRegistrationOptions({
      rpName: organizationName,
      rpID: this.rpId,
      userName: user.userName,
      userID: Buffer.from(userHandleOf(user.id), 'base64url'),
      challenge: Buffer.from(challenge, 'base64url'),
      attestationType: 'none',
      timeout: CHALLENGE_LIFETIME_MS,
      excludeCredentials: owned.map((p) => ({ id: p.webauthnId, transports: p.transports as never })),
      // Discoverable ("resident") so that it can sign in alone where the organization allows it.
      authenticatorSelection: { residentKey: 'required', userVerification: 'preferred' },
      supportedAlgorithmIDs: PASSKEY_ALGORITHMS,
    });
  }

  /** Options to sign `userId` in with one of their passkeys (second step), or anyone with a discoverable one (passkey alone, UV required). */
  async authenticationOptions(orgId: string, userId: string | undefined, flow: string): Promise<PublicKeyCredentialRequestOptionsJSON> {
    const challenge = await this.newChallenge(orgId, userId, 'authentication', flow);
    const owned = userId ? await this.passkeys.owned(orgId, userId) : [];
    return generateAuthenticationOptions({
      rpID: this.rpId,
      challenge: Buffer.from(challenge, 'base64url'),
      timeout: CHALLENGE_LIFETIME_MS,
      allowCredentials: owned.map((p) => ({ id: p.webauthnId, transports: p.transports as never })),
      userVerification: userId ? 'preferred' : 'required',
    });
  }

  /** Checks a registration answer for `userId` in this flow; consumes its challenge either way. */
  async verifyRegistration(
    orgId: string,
    userId: string,
    flow: string,
    answer: string | undefined,
    name: string,
  ): Promise<{ ok: true; passkey: NewPasskey } | Refused> {
    const response = parse<RegistrationResponseJSON>(answer);
    if (!response) return refused('malformed');
    const challenge = await this.consume(orgId, userId, 'registration', flow, response.response?.clientDataJSON);
    if (!challenge) return refused('challenge');
    try {
      const verified = await verifyRegistrationResponse({
        response,
        expectedChallenge: challenge,
        expectedOrigin: this.origins,
        expectedRPID: this.rpId,
        requireUserVerification: false,
        supportedAlgorithmIDs: PASSKEY_ALGORITHMS,
      });
      if (!verified.verified || !verified.registrationInfo) return refused('signature');
      const info = verified.registrationInfo;
      if (info.fmt !== 'none' && info.fmt !== 'packed') return refused('malformed');
      if ((await this.passkeys.find(orgId, info.credential.id)) !== undefined) return refused('already_registered');
      return {
        ok: true,
        passkey: {
          webauthnId: info.credential.id,
          userHandle: userHandleOf(userId),
          publicKey: info.credential.publicKey,
          signCount: info.credential.counter,
          backupEligible: info.credentialDeviceType === 'multiDevice',
          backupState: info.credentialBackedUp,
          transports: (response.response.transports ?? []).filter((t) => typeof t === 'string').slice(0, 8),
          name,
        },
      };
    } catch (error) {
      return refused(refusalOf(error));
    }
  }

  /**
   * Checks a sign-in answer: for `userId` (the second step) or for whoever the discoverable passkey
   * names (alone: user verification required, its user handle must be its owner's). A right answer
   * records the counter in the database, forward only; a counter that went backwards is refused.
   */
  async verifyAuthentication(
    orgId: string,
    userId: string | undefined,
    flow: string,
    answer: string | undefined,
  ): Promise<{ ok: true; passkey: StoredPasskey } | (Refused & { passkey?: StoredPasskey })> {
    const response = parse<AuthenticationResponseJSON>(answer);
    if (!response || typeof response.id !== 'string') return refused('malformed');
    const challenge = await this.consume(orgId, userId, 'authentication', flow, response.response?.clientDataJSON);
    if (!challenge) return refused('challenge');
    const passkey = await this.passkeys.find(orgId, response.id);
    if (!passkey) return refused('unknown_passkey');
    if (userId !== undefined && passkey.userId !== userId) return { ...refused('other_user'), passkey };
    if (userId === undefined && response.response.userHandle !== passkey.userHandle) return { ...refused('other_user'), passkey };
    if (passkey.status !== 'ISSUED') return { ...refused('passkey_not_issued'), passkey };
    try {
      const verified = await verifyAuthenticationResponse({
        response,
        expectedChallenge: challenge,
        expectedOrigin: this.origins,
        expectedRPID: this.rpId,
        requireUserVerification: userId === undefined,
        credential: { id: passkey.webauthnId, publicKey: new Uint8Array(passkey.publicKey), counter: passkey.signCount },
      });
      if (!verified.verified) return { ...refused('signature'), passkey };
      const info = verified.authenticationInfo;
      if (!(await this.passkeys.recordUse(orgId, passkey.credentialId, info.newCounter, info.credentialBackedUp, this.clock.now()))) {
        return { ...refused('cloned_authenticator'), passkey };
      }
      return { ok: true, passkey };
    } catch (error) {
      return { ...refused(refusalOf(error)), passkey };
    }
  }

  /** Deletes challenges past their expiry (used or not): the purge job's (DECISIONS 14.5). */
  async purgeExpired(): Promise<number> {
    const rows = await this.db.query<{ id: string }>('DELETE FROM webauthn_challenges WHERE expires_at < $1 RETURNING id', [this.clock.now()]);
    return rows.length;
  }

  private async newChallenge(orgId: string, userId: string | undefined, purpose: Purpose, flow: string): Promise<string> {
    const challenge = randomBytes(32).toString('base64url');
    const now = this.clock.now();
    await this.db.query(
      `INSERT INTO webauthn_challenges (id, org_id, user_id, purpose, binding, challenge, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [randomUUID(), orgId, userId ?? null, purpose, bindingOf(flow), challenge, now, new Date(now.getTime() + CHALLENGE_LIFETIME_MS)],
    );
    return challenge;
  }

  /**
   * The challenge the answer's clientDataJSON names, when it is an open challenge of this
   * organization, purpose, person and flow: marked used in the same statement (single use, on any
   * instance). Undefined for anything else: unknown, used, expired, another person's or flow's.
   */
  private async consume(orgId: string, userId: string | undefined, purpose: Purpose, flow: string, clientDataJSON: unknown): Promise<string | undefined> {
    if (typeof clientDataJSON !== 'string') return undefined;
    let challenge: unknown;
    try {
      challenge = (JSON.parse(Buffer.from(clientDataJSON, 'base64url').toString('utf8')) as { challenge?: unknown }).challenge;
    } catch {
      return undefined;
    }
    if (typeof challenge !== 'string' || challenge.length > 128) return undefined;
    const [row] = await this.db.query<{ challenge: string }>(
      `UPDATE webauthn_challenges SET used_at = $6
        WHERE challenge = $1 AND org_id = $2 AND purpose = $3 AND binding = $4 AND user_id IS NOT DISTINCT FROM $5::uuid
          AND used_at IS NULL AND expires_at > $6
        RETURNING challenge`,
      [challenge, orgId, purpose, bindingOf(flow), userId ?? null, this.clock.now()],
    );
    return row?.challenge;
  }
}

function refused(refusal: PasskeyRefusal): Refused {
  return { ok: false, refusal };
}

function parse<T>(answer: string | undefined): T | undefined {
  if (!answer || answer.length > MAX_RESPONSE) return undefined;
  try {
    const parsed = JSON.parse(answer) as unknown;
    return parsed && typeof parsed === 'object' && typeof (parsed as { response?: unknown }).response === 'object' ? (parsed as T) : undefined;
  } catch {
    return undefined;
  }
}

/** @simplewebauthn/server's error, as the refusal the page names. */
function refusalOf(error: unknown): PasskeyRefusal {
  const message = error instanceof Error ? error.message : '';
  if (/RP ID/i.test(message)) return 'rp_id';
  if (/origin/i.test(message)) return 'origin';
  if (/challenge/i.test(message)) return 'challenge';
  if (/counter/i.test(message)) return 'cloned_authenticator';
  if (/User verification/i.test(message)) return 'user_verification';
  if (/public key alg/i.test(message)) return 'algorithm';
  if (/signature|verify/i.test(message)) return 'signature';
  return 'malformed';
}
