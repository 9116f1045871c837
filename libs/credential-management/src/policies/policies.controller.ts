import { Audited } from '@app/audit';
import { Body, Controller, Get, Param, Put } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags, SchemaObject } from '@nestjs/swagger';
import { Permission } from '@app/auth';
import {
  Actor,
  ApiJsonBody,
  CurrentPrincipal,
  IfMatch,
  IfMatchHeader,
  PathFormats,
  Principal,
  RequestActor,
  RequireAdministrator,
  RequirePermission,
  ScimMediaTypes,
  credentialManagementPaths,
  ApiSchemaResponse,
  META_RESPONSE_SCHEMA,
  z,
} from '@app/common';
import { PolicyPresenter } from './policy.presenter';
import { POLICY_DEFAULTS, credentialPolicySchema, walletPolicySchema } from './policy.schema';
import { PolicyService } from './policy.service';

/** The answer: the policy's attributes (from the schema that validates a PUT) with id, schemas and meta. */
function policyResponse(schema: z.ZodType): SchemaObject {
  const attributes = z.toJSONSchema(schema, { target: 'openapi-3.0', unrepresentable: 'any' }) as SchemaObject;
  return {
    type: 'object',
    required: ['schemas', 'id', 'meta'],
    properties: {
      schemas: { type: 'array', items: { type: 'string' } },
      id: { type: 'string', enum: ['global'] },
      ...attributes.properties,
      meta: META_RESPONSE_SCHEMA,
    },
  };
}
const CREDENTIAL_POLICY_RESPONSE = policyResponse(credentialPolicySchema);
const WALLET_POLICY_RESPONSE = policyResponse(walletPolicySchema);

/** GET /CredentialPolicy/global (DECISIONS 5.2: credentialPolicy.read). */
@ApiTags('credential management: policies')
@ApiBearerAuth()
@ScimMediaTypes()
@PathFormats({ id: 'globalPolicyId' })
@Controller(credentialManagementPaths('CredentialPolicy'))
export class CredentialPolicyController {
  constructor(
    private readonly policies: PolicyService,
    private readonly presenter: PolicyPresenter,
  ) {}

  @Get(':id')
  @RequirePermission(Permission.CredentialPolicyRead)
  @ApiOperation({ summary: "The organization's credential policy (id: global)" })
  @ApiSchemaResponse(CREDENTIAL_POLICY_RESPONSE)
  async get(@CurrentPrincipal() principal: Principal) {
    return this.presenter.policy(await this.policies.read(principal.org, 'credential'));
  }
}

/** GET /WalletPolicy/global (DECISIONS 5.2: walletPolicy.read). */
@ApiTags('credential management: policies')
@ApiBearerAuth()
@ScimMediaTypes()
@PathFormats({ id: 'globalPolicyId' })
@Controller(credentialManagementPaths('WalletPolicy'))
export class WalletPolicyController {
  constructor(
    private readonly policies: PolicyService,
    private readonly presenter: PolicyPresenter,
  ) {}

  @Get(':id')
  @RequirePermission(Permission.WalletPolicyRead)
  @ApiOperation({ summary: "The organization's wallet policy (id: global)" })
  @ApiSchemaResponse(WALLET_POLICY_RESPONSE)
  async get(@CurrentPrincipal() principal: Principal) {
    return this.presenter.policy(await this.policies.read(principal.org, 'wallet'));
  }
}

/** The administrator's side: read and replace both policies (CREDENTIAL-MANAGEMENT.md "Reference data"). */
@ApiTags('administration: credential management')
@ApiBearerAuth()
@RequireAdministrator('organization')
@Controller('admin/v1/organizations/:org')
export class PolicyAdminController {
  constructor(
    private readonly policies: PolicyService,
    private readonly presenter: PolicyPresenter,
  ) {}

  @Get('credential-policy')
  @ApiOperation({ summary: 'Read the credential policy (the defaults until one is written)' })
  @ApiSchemaResponse(CREDENTIAL_POLICY_RESPONSE)
  async getCredentialPolicy(@Param('org') orgId: string) {
    return this.presenter.policy(await this.policies.read(orgId, 'credential'));
  }

  @Put('credential-policy')
  @Audited('credential_policy.replace')
  @ApiOperation({ summary: 'Replace the credential policy', description: 'Attributes left out take their defaults; If-Match is honoured.' })
  @ApiJsonBody(credentialPolicySchema, POLICY_DEFAULTS.credential)
  @ApiSchemaResponse(CREDENTIAL_POLICY_RESPONSE)
  async putCredentialPolicy(@RequestActor() actor: Actor, @Param('org') orgId: string, @Body() body: unknown, @IfMatchHeader() ifMatch: IfMatch | undefined) {
    return this.presenter.policy(await this.policies.replace(orgId, 'credential', body, actor, ifMatch));
  }

  @Get('wallet-policy')
  @ApiOperation({ summary: 'Read the wallet policy (the defaults until one is written)' })
  @ApiSchemaResponse(WALLET_POLICY_RESPONSE)
  async getWalletPolicy(@Param('org') orgId: string) {
    return this.presenter.policy(await this.policies.read(orgId, 'wallet'));
  }

  @Put('wallet-policy')
  @Audited('wallet_policy.replace')
  @ApiOperation({ summary: 'Replace the wallet policy', description: 'Attributes left out take their defaults; If-Match is honoured.' })
  @ApiJsonBody(walletPolicySchema, POLICY_DEFAULTS.wallet)
  @ApiSchemaResponse(WALLET_POLICY_RESPONSE)
  async putWalletPolicy(@RequestActor() actor: Actor, @Param('org') orgId: string, @Body() body: unknown, @IfMatchHeader() ifMatch: IfMatch | undefined) {
    return this.presenter.policy(await this.policies.replace(orgId, 'wallet', body, actor, ifMatch));
  }
}
