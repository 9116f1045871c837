import { Controller, Get } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Permission } from '@app/auth';
import { ApiSchemaResponse, CANONICAL_PREFIX, CurrentPrincipal, Principal, RequirePermission, ScimMediaTypes, credentialManagementPaths } from '@app/common';
import { AppConfig } from '@app/config';
import { DEVICE_STATUSES } from '@app/device';
import { StatsService } from './stats.service';

export const STATS_SCHEMA = 'urn:vendor:scim:api:cms:1.0:Stats';

const counts = (names: readonly string[]) => ({
  type: 'object' as const,
  properties: Object.fromEntries(names.map((name) => [name, { type: 'integer' as const }])),
});

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
  @ApiSchemaResponse({
    type: 'object',
    properties: {
      schemas: { type: 'array', items: { type: 'string' } },
      devices: counts(DEVICE_STATUSES),
      credentials: counts(['ISSUED', 'ON_HOLD', 'REVOKED']),
      users: counts(['cardholders', 'operators']),
      contentRequests: counts(['requested', 'approved', 'completed', 'failed', 'denied', 'cancelled', 'expired']),
      meta: { type: 'object', properties: { resourceType: { type: 'string' }, location: { type: 'string' } } },
    },
  })
  async get(@CurrentPrincipal() principal: Principal) {
    return {
      schemas: [STATS_SCHEMA],
      ...(await this.stats.stats(principal)),
      meta: { resourceType: 'Stats', location: `${this.config.publicBaseUrl}${CANONICAL_PREFIX}/Stats` },
    };
  }
}
