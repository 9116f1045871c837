import { Audited } from '@app/audit';
import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiQuery, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { Permission } from '@app/auth';
import {
  Actor,
  ApiJsonBody,
  CurrentPrincipal,
  PathFormats,
  Principal,
  RequestActor,
  RequireAdministrator,
  RequirePermission,
  ScimMediaTypes,
  credentialManagementPaths,
  listResponse,
  projectResource,
  projectionFromQuery,
  searchFromQuery,
  ApiScimResponse,
  ApiPaging,
  IfMatch,
  IfMatchHeader,
} from '@app/common';
import { PrinterPresenter } from './printer.presenter';
import { PRINTER_SEARCH_DEFINITION, createPrinterSchema, patchPrinterSchema } from './printer.schema';
import { PrinterService } from './printer.service';

/** GET /Printer and GET /Printer/{id} (DECISIONS 5.2: printer.read). */
@ApiTags('credential management: printers')
@ApiBearerAuth()
@ScimMediaTypes()
@PathFormats({ id: 'uuid' })
@Controller(credentialManagementPaths('Printer'))
export class PrinterController {
  constructor(
    private readonly printers: PrinterService,
    private readonly presenter: PrinterPresenter,
  ) {}

  @Get()
  @RequirePermission(Permission.PrinterRead)
  @ApiOperation({ summary: 'List the card printers (filter, paging, sorting, attributes)' })
  @ApiQuery({ name: 'filter', required: false, example: 'status eq "READY"' })
  @ApiScimResponse(PRINTER_SEARCH_DEFINITION, { list: true })
  async list(@CurrentPrincipal() principal: Principal, @Query() query: Record<string, unknown>) {
    const search = searchFromQuery(query, PRINTER_SEARCH_DEFINITION);
    const { rows, total } = await this.printers.search(principal.org, search);
    return listResponse(
      rows.map((row) => projectResource(this.presenter.printer(row), PRINTER_SEARCH_DEFINITION, search)),
      total,
      search.page,
    );
  }

  @Get(':id')
  @RequirePermission(Permission.PrinterRead)
  @ApiOperation({ summary: 'Read a card printer' })
  @ApiScimResponse(PRINTER_SEARCH_DEFINITION)
  async get(@CurrentPrincipal() principal: Principal, @Param('id') id: string, @Query() query: Record<string, unknown>) {
    const projection = projectionFromQuery(query, PRINTER_SEARCH_DEFINITION);
    return projectResource(this.presenter.printer(await this.printers.get(principal.org, id)), PRINTER_SEARCH_DEFINITION, projection);
  }
}

/** The administrator's side (CREDENTIAL-MANAGEMENT.md "Reference data"). */
@ApiTags('administration: credential management')
@ApiBearerAuth()
@RequireAdministrator('organization')
@PathFormats({ id: 'uuid' })
@Controller('admin/v1/organizations/:org/printers')
export class PrinterAdminController {
  constructor(
    private readonly printers: PrinterService,
    private readonly presenter: PrinterPresenter,
  ) {}

  @Post()
  @Audited('printer.create')
  @ApiOperation({ summary: 'Add a card printer' })
  @ApiJsonBody(createPrinterSchema, { name: 'Desk 1', model: 'Evolis Primacy 2', location: 'Berlin, front desk', status: 'READY' })
  @ApiScimResponse(PRINTER_SEARCH_DEFINITION, { status: 201 })
  async create(@RequestActor() actor: Actor, @Param('org') orgId: string, @Body() body: unknown, @Res({ passthrough: true }) reply: FastifyReply) {
    const view = this.presenter.printer(await this.printers.create(orgId, body, actor));
    reply.header('Location', view.meta.location);
    return view;
  }

  @Get()
  @ApiOperation({ summary: 'List the card printers' })
  @ApiPaging()
  @ApiQuery({ name: 'filter', required: false, example: 'status eq "READY"' })
  @ApiScimResponse(PRINTER_SEARCH_DEFINITION, { list: true })
  async list(@Param('org') orgId: string, @Query() query: Record<string, unknown>) {
    const search = searchFromQuery(query, PRINTER_SEARCH_DEFINITION);
    const { rows, total } = await this.printers.search(orgId, search);
    return listResponse(
      rows.map((row) => this.presenter.printer(row)),
      total,
      search.page,
    );
  }

  @Get(':id')
  @ApiOperation({ summary: 'Read a card printer' })
  @ApiScimResponse(PRINTER_SEARCH_DEFINITION)
  async get(@Param('org') orgId: string, @Param('id') id: string) {
    return this.presenter.printer(await this.printers.get(orgId, id));
  }

  @Patch(':id')
  @Audited('printer.update')
  @ApiOperation({ summary: 'Change a card printer (null clears model or location)' })
  @ApiJsonBody(patchPrinterSchema, { status: 'OFFLINE' })
  @ApiScimResponse(PRINTER_SEARCH_DEFINITION)
  async update(
    @RequestActor() actor: Actor,
    @Param('org') orgId: string,
    @Param('id') id: string,
    @Body() body: unknown,
    @IfMatchHeader() ifMatch: IfMatch | undefined,
  ) {
    return this.presenter.printer(await this.printers.update(orgId, id, body, actor, ifMatch));
  }

  @Delete(':id')
  @Audited('printer.delete')
  @HttpCode(204)
  @ApiOperation({ summary: 'Remove a card printer' })
  async remove(
    @RequestActor() actor: Actor,
    @Param('org') orgId: string,
    @Param('id') id: string,
    @IfMatchHeader() ifMatch: IfMatch | undefined,
  ): Promise<void> {
    await this.printers.delete(orgId, id, actor, ifMatch);
  }
}
