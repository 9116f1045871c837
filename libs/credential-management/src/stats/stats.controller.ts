import { Controller, Get } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Permission } from '@app/auth';
import { CANONICAL_PREFIX, CurrentPrincipal, Principal, RequirePermission, ScimMediaTypes, credentialManagementPaths } from '@app/common';
import { AppConfig } from '@app/config';
import { StatsService } from './stats.service';

export const STATS_SCHEMA = 'urn:vendor:scim:api:cms:1.0:Stats';

/** GET /Stats (DECISIONS 5.2: stats.read). */
@ApiTags('credential management: stats')
@ApiBearerAuth()
@ScimMediaTypes()
@Controller(credentialManagementPaths('Stats'))
export class StatsController {
  constructor(
    private readonly stats: StatsService,
    private readonly config: AppConfig,
  ) {}

  @Get()
  @RequirePermission(Permission.StatsRead)
  @ApiOperation({ summary: 'Counts of devices, credentials, users and content requests by status (zeros included)' })
  async get(@CurrentPrincipal() principal: Principal) {
    return {
      schemas: [STATS_SCHEMA],
      ...(await this.stats.stats(principal)),
      meta: { resourceType: 'Stats', location: `${this.config.publicBaseUrl}${CANONICAL_PREFIX}/Stats` },
    };
  }
}
