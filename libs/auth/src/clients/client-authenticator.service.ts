import { Injectable } from '@nestjs/common';
import { OAuthError, Clock, RequestOrigin } from '@app/common';
import { OrganizationSettings, SecretHasher, StoredCertificate, SystemAccountRow } from '@app/accounts';
import { Metrics } from '@app/observability';
import { TokenRepository } from '../tokens/token.repository';
import { AssertionVerifier } from './assertion-verifier';
import { ClientCredentialCache } from './client-credential.cache';
import { claimed } from './claimed-identity';
import { FailureAudit, LockoutService } from './lockout.service';

export const CLIENT_ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

export type ClientAuthMethod = 'client_secret_post' | 'client_secret_basic' | 'private_key_jwt';

export interface AuthenticatedClient {
  account: SystemAccountRow;
  orgSettings: OrganizationSettings;
  method: ClientAuthMethod;
  secretId?: string;
}

export interface ClientAuthRequest {
  /** Organization id from the path. */
  org: string;
  params: Record<string, string>;
  authorization?: string;
  sourceAddress: string;
  /** The request's correlation id, for the audit events of a failure. */
  correlationId?: string;
  /** Accepted `aud` values of a client assertion: the Token URL first, then the issuer. */
  audiences: string[];
}

/** One description for unknown org, unknown Client ID, wrong secret and bad signature (DECISIONS 3.1). */
export const GENERIC_CLIENT_FAILURE = 'Client authentication failed.';

/**
 * Client authentication at the token, introspection and revocation endpoints (DECISIONS 3.1, 3.3):
 * client_secret in the body, HTTP Basic (RFC 6749 2.3.1), or a signed client_assertion (RFC 7523),
 * exactly one per request. Every failure is 401 invalid_client and counts toward the lockout.
 */
@Injectable()
export class ClientAuthenticator {
  constructor(
    private readonly credentials: ClientCredentialCache,
    private readonly hasher: SecretHasher,
    private readonly assertions: AssertionVerifier,
    private readonly lockout: LockoutService,
    private readonly tokens: TokenRepository,
    private readonly clock: Clock,
    private readonly metrics: Metrics,
  ) {}

  async authenticate(request: ClientAuthRequest): Promise<AuthenticatedClient> {
    const { params } = request;
    const basic = parseBasic(request.authorization);
    const methods = [basic !== undefined, params.client_secret !== undefined, params.client_assertion !== undefined].filter(Boolean).length;
    if (methods > 1) throw OAuthError.invalidRequest('Use exactly one client authentication method: client_secret, HTTP Basic, or client_assertion.');
    if (basic) return this.withSecret(request, basic.clientId, basic.secret, 'client_secret_basic');
    if (params.client_assertion !== undefined) return this.withAssertion(request);
    if (params.client_secret !== undefined) {
      if (!params.client_id) throw OAuthError.invalidRequest('client_secret needs client_id.');
      return this.withSecret(request, params.client_id, params.client_secret, 'client_secret_post');
    }
    throw OAuthError.invalidClient('No client authentication: send client_id and client_secret, HTTP Basic, or client_assertion.');
  }

  private async withSecret(request: ClientAuthRequest, clientId: string, secret: string, method: ClientAuthMethod): Promise<AuthenticatedClient> {
    const basic = method === 'client_secret_basic';
    // Hash first, whether or not the account exists, so timing does not tell which case it was.
    const presented = this.hasher.hash(secret);
    const { failures, account: found } = await this.credentials.findWithSecretHashes(
      belongsTo(clientId, request.org) ? clientId : '',
      this.lockout.keysFor(clientId, request.sourceAddress),
      this.lockout.windowStart(),
    );
    this.lockout.assertWithinLimits(failures);
    const fail = (reason: string, description = GENERIC_CLIENT_FAILURE) =>
      this.failed(reason, clientId, request, OAuthError.invalidClient(description, basic), {
        org: request.org,
        claimed: claimed(clientId, found !== undefined),
        method,
      });
    if (!found) throw await fail('unknown_client');
    const match = found.credentials.find((s) => this.hasher.matches(presented, s.hash));
    if (!match) throw await fail('wrong_secret');
    // Possession proven: from here the description may name the credential's state.
    if (match.expires_at <= this.clock.now()) {
      throw await fail('expired_secret', `The client secret expired on ${match.expires_at.toISOString()}; create a new secret for this system account.`);
    }
    if (found.account.disabled) throw await fail('disabled', 'The system account is disabled.');
    return { account: found.account, orgSettings: found.orgSettings, method, secretId: match.id };
  }

  private async withAssertion(request: ClientAuthRequest): Promise<AuthenticatedClient> {
    const { params } = request;
    if (params.client_assertion_type !== undefined && params.client_assertion_type !== CLIENT_ASSERTION_TYPE) {
      throw OAuthError.invalidRequest(`client_assertion_type must be ${CLIENT_ASSERTION_TYPE}.`);
    }
    const refuse = (description: string) => OAuthError.invalidClient(description);
    // The Client ID is named in the log once the account is found (ClaimedIdentities).
    const audit = (clientId: string | undefined, exists = false): FailureAudit => ({
      org: request.org,
      claimed: claimed(clientId, exists),
      method: 'private_key_jwt',
    });
    let assertion;
    try {
      assertion = this.assertions.parse(params.client_assertion, refuse);
    } catch (error) {
      throw await this.failed('malformed_assertion', undefined, request, error as OAuthError, audit(params.client_id));
    }
    const clientId = assertion.subject;
    if (params.client_id !== undefined && params.client_id !== clientId) {
      throw await this.failed('client_id_mismatch', undefined, request, refuse("client_id must equal the assertion's iss and sub."), audit(clientId));
    }
    const { failures, account: found } = await this.credentials.findWithCertificates(
      belongsTo(clientId, request.org) ? clientId : '',
      this.lockout.keysFor(clientId, request.sourceAddress),
      this.lockout.windowStart(),
    );
    this.lockout.assertWithinLimits(failures);
    if (!found) throw await this.failed('unknown_client', clientId, request, refuse(GENERIC_CLIENT_FAILURE), audit(clientId));
    const certificate = this.assertions.findSigner(assertion, found.credentials);
    if (!certificate) throw await this.failed('bad_signature', clientId, request, refuse(GENERIC_CLIENT_FAILURE), audit(clientId, true));
    try {
      const { expiresAt } = this.assertions.checkAfterPossession(assertion, certificate, request.audiences, refuse);
      if (found.account.disabled) throw refuse('The system account is disabled.');
      if (!(await this.tokens.rememberJti(found.account.id, assertion.claims.jti as string, expiresAt))) {
        throw refuse("The assertion's jti was used before; every assertion needs a new jti.");
      }
    } catch (error) {
      // An expired certificate still in use is a security event of its own (DECISIONS 11).
      const expired = expiredCertificate(certificate, this.clock.now());
      throw await this.failed(expired ? 'certificate_expired' : 'assertion_rejected', clientId, request, error as OAuthError, {
        ...audit(clientId, true),
        expiredCertificate: expired,
      });
    }
    return { account: found.account, orgSettings: found.orgSettings, method: 'private_key_jwt' };
  }

  /** Counts the failure for the claimed Client ID, whether it exists or not (DECISIONS 4). */
  private async failed(reason: string, subject: string | undefined, origin: RequestOrigin, error: OAuthError, audit: FailureAudit): Promise<OAuthError> {
    this.metrics.authFailures.inc({ reason });
    await this.lockout.recordFailure(subject, origin, reason, audit);
    return error;
  }
}

/** The certificate's details when it is past its validity (notAfter) or its credential expiry, else undefined. */
export function expiredCertificate(certificate: StoredCertificate, now: Date): FailureAudit['expiredCertificate'] {
  if (now < certificate.not_after && now < certificate.expires_at) return undefined;
  return { thumbprint: certificate.thumbprint, notAfter: certificate.not_after, expiresAt: certificate.expires_at };
}

/** A Client ID belongs to the path's organization when it is `{org}-{suffix}`. */
function belongsTo(clientId: string, org: string): boolean {
  return clientId.length > org.length + 1 && clientId.startsWith(`${org}-`) && !clientId.slice(org.length + 1).includes('-');
}

/** RFC 6749 2.3.1: Basic with form-urlencoded id and secret. Undefined when not Basic. */
function parseBasic(header: string | undefined): { clientId: string; secret: string } | undefined {
  if (!header || !/^basic /i.test(header)) return undefined;
  const decoded = Buffer.from(header.slice(6).trim(), 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 1) throw OAuthError.invalidClient('The Basic credentials must be base64(client_id:client_secret).', true);
  try {
    const unescape = (v: string) => decodeURIComponent(v.replace(/\+/g, ' '));
    return { clientId: unescape(decoded.slice(0, colon)), secret: unescape(decoded.slice(colon + 1)) };
  } catch {
    throw OAuthError.invalidClient('The Basic credentials are not valid form-urlencoded text.', true);
  }
}
