import { Controller, Get, Header, Param } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { AuthorizedBy, CurrentPrincipal, isOrgId, notFound, Principal, Public } from '@app/common';
import { AppConfig, JWKS_MAX_AGE_S } from '@app/config';
import { ASSERTION_ALGORITHMS } from '../clients/assertion-verifier';
import { SigningKeys } from '../signing-keys/signing-keys.service';
import { TokenService } from '../tokens/token.service';
import { RoleCatalog } from '../authorization/role-catalog';
import { invalidToken } from './bearer.guard';
import { SUPPORTED_GRANTS } from './token.controller';
import { SUPPORTED_SCOPES } from '../oidc/authorization-request';
import { ACR_VALUES } from '../oidc/authorization.service';

const AUTH_METHODS = ['client_secret_post', 'client_secret_basic', 'private_key_jwt'];
/** Public clients of the authorization code flow authenticate with nothing but PKCE (DECISIONS 15.1). */
const TOKEN_AUTH_METHODS = [...AUTH_METHODS, 'none'];

/**
 * OpenID discovery and JWKS (public: clients need them before they hold a token; they answer alike
 * for every syntactically valid organization id, so they reveal nothing), and the token probe.
 */
@ApiTags('token service')
@Controller('authentication/customer/:org')
export class DiscoveryController {
  constructor(
    private readonly config: AppConfig,
    private readonly signingKeys: SigningKeys,
    private readonly tokens: TokenService,
    private readonly roles: RoleCatalog,
  ) {}

  @Public()
  @Get('.well-known/openid-configuration')
  @Header('Cache-Control', 'public, max-age=300')
  discovery(@Param('org') org: string) {
    requireOrgSyntax(org);
    const issuer = this.tokens.issuer(org);
    return {
      issuer,
      authorization_endpoint: `${issuer}/authorize`,
      token_endpoint: `${issuer}/token`,
      end_session_endpoint: `${issuer}/end-session`,
      jwks_uri: `${issuer}/.well-known/jwks.json`,
      introspection_endpoint: `${issuer}/introspect`,
      revocation_endpoint: `${issuer}/revoke`,
      // OpenID CIBA Core 1.0 section 4 (DECISIONS 16): poll and ping, no user code.
      backchannel_authentication_endpoint: `${issuer}/backchannel-authentication`,
      backchannel_token_delivery_modes_supported: ['poll', 'ping'],
      backchannel_user_code_parameter_supported: false,
      grant_types_supported: SUPPORTED_GRANTS,
      token_endpoint_auth_methods_supported: TOKEN_AUTH_METHODS,
      token_endpoint_auth_signing_alg_values_supported: [...ASSERTION_ALGORITHMS],
      introspection_endpoint_auth_methods_supported: AUTH_METHODS,
      revocation_endpoint_auth_methods_supported: AUTH_METHODS,
      id_token_signing_alg_values_supported: this.signingKeys.algorithms(),
      subject_types_supported: ['public'],
      claims_supported: ['iss', 'sub', 'aud', 'iat', 'exp', 'org', 'azp', 'nonce', 'auth_time', 'amr', 'acr'],
      // The authorization code flow for people (DECISIONS 15).
      response_types_supported: ['code'],
      response_modes_supported: ['query'],
      code_challenge_methods_supported: ['S256'],
      scopes_supported: [...SUPPORTED_SCOPES],
      prompt_values_supported: ['none', 'login', 'consent', 'select_account'],
      acr_values_supported: Object.values(ACR_VALUES),
      authorization_response_iss_parameter_supported: true,
      claims_parameter_supported: false,
      request_parameter_supported: false,
      request_uri_parameter_supported: false,
    };
  }

  @Public()
  /** Every published token-signing key: next, active, and retired until its last token expired (DECISIONS 12.1). */
  @Get('.well-known/jwks.json')
  @Header('Cache-Control', `public, max-age=${JWKS_MAX_AGE_S}`)
  jwks(@Param('org') org: string) {
    requireOrgSyntax(org);
    return { keys: this.signingKeys.jwks() };
  }

  /** Lets a caller check its token: who it is, in which organization, with which role and rights. */
  @Get('whoami')
  @AuthorizedBy('own token')
  whoami(@Param('org') org: string, @CurrentPrincipal() principal: Principal) {
    if (principal.org !== org) throw invalidToken(`The access token was issued for organization ${principal.org}, not ${org}.`);
    const role = this.roles.find(principal.role);
    return {
      [principal.kind === 'user' ? 'userName' : 'clientId']: principal.name,
      org: principal.org,
      role: principal.role,
      scopes: [...(role?.scopes ?? [])],
      permissions: role?.sortedPermissions ?? [],
    };
  }
}

function requireOrgSyntax(org: string): void {
  if (!isOrgId(org)) throw notFound('Organization ids are 1-64 characters of A-Z, a-z, 0-9 and _.');
}
