import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { OperatorDependentPolicy, Permission } from '@app/auth';
import {
  ApiScimResponse,
  CurrentPrincipal,
  PathFormats,
  Principal,
  RequirePermission,
  ScimMediaTypes,
  credentialManagementPaths,
  notFound,
  projectResource,
  projectionFromQuery,
  isUuid,
} from '@app/common';
import { CredentialPresenter } from './credential.presenter';
import { CredentialRepository } from './credential.repository';
import { CREDENTIAL_DEFINITION } from './credential.schema';

/** The Credential resource (DECISIONS 5.2: credential.read): read-only; its status follows its device. */
@ApiTags('credential management: credentials')
@ApiBearerAuth()
@PathFormats({ id: 'uuid' })
@Controller(credentialManagementPaths('Credential'))
export class CredentialsController {
  constructor(
    private readonly credentials: CredentialRepository,
    private readonly presenter: CredentialPresenter,
    private readonly operatorDependent: OperatorDependentPolicy,
  ) {}

  @Get(':id')
  @ScimMediaTypes()
  @RequirePermission(Permission.CredentialRead)
  @ApiOperation({ summary: 'Read a credential (certificate data for PKI_CERTIFICATE; an OATH secret is never returned after its sync session)' })
  @ApiScimResponse(CREDENTIAL_DEFINITION)
  async get(@CurrentPrincipal() principal: Principal, @Param('id') id: string, @Query() query: Record<string, unknown>) {
    const row = isUuid(id) ? await this.credentials.find(principal.org, id) : undefined;
    // Operator Dependent: the credentials of the wallets it reaches (one taken out of its wallet by a recycle reaches everyone, as stock devices do).
    if (!row || (row.owner_groups !== null && !this.operatorDependent.canReach(principal, { groups: row.owner_groups }))) {
      throw notFound(`Credential ${id.slice(0, 64)} does not exist.`);
    }
    return projectResource(this.presenter.credential(row), CREDENTIAL_DEFINITION, projectionFromQuery(query, CREDENTIAL_DEFINITION));
  }
}
