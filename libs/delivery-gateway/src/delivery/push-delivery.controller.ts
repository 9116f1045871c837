import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiQuery, ApiTags } from '@nestjs/swagger';
import { Permission } from '@app/auth';
import { ApiPaging, CurrentPrincipal, PathFormats, Principal, RequirePermission, ScimMediaTypes } from '@app/common';
import { requireTenant } from '../common/request-rules';
import { PushDeliveryPresenter } from './push-delivery.presenter';
import { PushDeliveryService } from './push-delivery.service';

/**
 * `/configuration/{tenant}/v2/DeliveryGateway/Notifications` (DECISIONS 10.5): the delivery state
 * of each push notification, for those who configure the gateways (Read reference data and Manage
 * OOB Adapter Configuration, as for changing a gateway). `?userId=`, `?state=`, SCIM paging.
 */
@ApiTags('push delivery gateways')
@ApiBearerAuth()
@ScimMediaTypes()
@PathFormats({ id: 'uuid' })
@Controller('configuration/:tenant/v2/DeliveryGateway/Notifications')
export class PushDeliveryController {
  constructor(
    private readonly deliveries: PushDeliveryService,
    private readonly presenter: PushDeliveryPresenter,
  ) {}

  @Get()
  @RequirePermission(Permission.ReferenceDataRead, Permission.OobAdapterConfigurationManage)
  @ApiPaging()
  @ApiQuery({ name: 'state', required: false, schema: { type: 'string', enum: ['pending', 'sent', 'failed', 'deadLettered', 'discarded'] } })
  @ApiQuery({ name: 'userId', required: false, schema: { type: 'string', format: 'uuid' } })
  async list(@CurrentPrincipal() principal: Principal, @Param('tenant') tenant: string, @Query() query: Record<string, unknown>) {
    const org = requireTenant(principal, tenant);
    const parsed = this.deliveries.parseQuery(query);
    const { rows, total } = await this.deliveries.list(org, parsed);
    return this.presenter.list(rows, total, parsed.page);
  }

  @Get(':id')
  @RequirePermission(Permission.ReferenceDataRead, Permission.OobAdapterConfigurationManage)
  async get(@CurrentPrincipal() principal: Principal, @Param('tenant') tenant: string, @Param('id') id: string) {
    const org = requireTenant(principal, tenant);
    return this.presenter.notification(await this.deliveries.get(org, id));
  }
}
