import { Body, Controller, Get, HttpCode, Param, Post, Put } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Audited } from '@app/audit';
import {
  Actor,
  ApiJsonBody,
  ApiPemBody,
  ApiSchemaResponse,
  RequestActor,
  RequireAdministrator,
  listResponse,
  parseBody,
  readPem,
  scimListSchema,
  z,
} from '@app/common';
import { CertificateAuthority } from '../certificate-authority.service';
import { CaPresenter } from './ca.presenter';

const createCaSchema = z
  .object({
    subject: z
      .string()
      .min(3)
      .max(256)
      .regex(/^[A-Za-z]+=/, 'must be a distinguished name such as "CN=Acme Issuing CA, O=Acme"')
      .optional(),
    keyAlgorithm: z.enum(['EC-P256', 'EC-P384', 'RSA-3072'], { message: 'must be EC-P256, EC-P384 or RSA-3072' }).optional(),
    validityDays: z.number().int().min(1).max(36500).optional(),
    mode: z.enum(['self-signed', 'subordinate'], { message: 'must be self-signed or subordinate' }).optional(),
  })
  .strict();

const renewCaSchema = createCaSchema.omit({ mode: true });

const CA_GENERATION_SCHEMA = {
  type: 'object' as const,
  required: ['generation', 'status', 'mode', 'keyAlgorithm', 'subject', 'notAfter'],
  properties: {
    generation: { type: 'integer' as const, example: 1 },
    status: { type: 'string' as const, enum: ['active', 'awaiting-certificate', 'retired'] },
    mode: { type: 'string' as const, enum: ['self-signed', 'subordinate'] },
    keyAlgorithm: { type: 'string' as const, example: 'EC-P256' },
    subject: { type: 'string' as const, example: 'CN=acme Issuing CA' },
    notAfter: { type: 'string' as const, format: 'date-time', nullable: true, description: 'null while awaiting its certificate' },
  },
};

/** The organization's issuing CA (CREDENTIAL-MANAGEMENT.md, "PKI"): one per organization, its key in the HSM. */
@ApiTags('administration')
@ApiBearerAuth()
@RequireAdministrator('organization')
@Controller('admin/v1/organizations/:org/ca')
export class CaAdminController {
  constructor(
    private readonly authority: CertificateAuthority,
    private readonly presenter: CaPresenter,
  ) {}

  @Get()
  @ApiOperation({ summary: "The organization's CA: status, certificate (PEM) or, for a subordinate CA awaiting its certificate, the CSR" })
  async get(@Param('org') org: string) {
    return this.view(org);
  }

  @Get('generations')
  @ApiOperation({
    summary:
      "The CA's generations, newest first (a renewal awaiting its certificate, the current one, the retired ones); an empty list when the organization has no CA",
  })
  @ApiSchemaResponse(scimListSchema(CA_GENERATION_SCHEMA))
  async generations(@Param('org') org: string) {
    const { current, others } = await this.authority.allGenerations(org);
    const rows = [...(current ? [current] : []), ...others].sort((a, b) => b.generation - a.generation).map((row) => this.presenter.generation(row));
    return listResponse(rows, rows.length, { startIndex: 1, count: Math.max(rows.length, 1) });
  }

  @Post()
  @Audited('ca.create')
  @ApiOperation({ summary: 'Create the CA: a key pair in the HSM, then a self-signed certificate, or a CSR for the enterprise root (subordinate)' })
  @ApiJsonBody(createCaSchema, { keyAlgorithm: 'EC-P256', mode: 'self-signed' })
  async create(@Param('org') org: string, @Body() body: unknown, @RequestActor() actor: Actor) {
    const input = parseBody(createCaSchema, body ?? {});
    return this.presenter.ca(await this.authority.create(org, input, actor));
  }

  @Post('renewal')
  @Audited('ca.renew', 'ca.rollover')
  @ApiOperation({
    summary:
      'Renew the CA: a new key CA_KEY/{org}/{n} in the HSM and a self-signed certificate that issues from now on, or (subordinate) a CSR for the enterprise root; the previous key keeps signing its CRL and OCSP answers',
  })
  @ApiJsonBody(renewCaSchema, { keyAlgorithm: 'EC-P256' })
  async renew(@Param('org') org: string, @Body() body: unknown, @RequestActor() actor: Actor) {
    const input = parseBody(renewCaSchema, body ?? {});
    await this.authority.renew(org, input, actor);
    return this.view(org);
  }

  @Put('certificate')
  @HttpCode(200)
  @Audited('ca.create', 'ca.rollover')
  @ApiOperation({ summary: "Install a subordinate CA's certificate, or its renewal's, signed by the enterprise root (PEM, chain after it)" })
  @ApiPemBody()
  async install(@Param('org') org: string, @Body() body: unknown, @RequestActor() actor: Actor) {
    await this.authority.installCertificate(org, readPem(body), actor);
    return this.view(org);
  }

  private async view(org: string) {
    return this.presenter.ca(await this.authority.get(org), await this.authority.generations(org));
  }
}
