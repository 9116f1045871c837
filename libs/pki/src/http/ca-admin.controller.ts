import { Body, Controller, Get, HttpCode, Param, Post, Put } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Audited } from '@app/audit';
import {
  Actor,
  ApiJsonBody,
  ApiPemBody,
  ApiSchemaResponse,
  PathFormats,
  RequestActor,
  RequireAdministrator,
  listResponse,
  parseBody,
  readPem,
  scimListSchema,
  z,
} from '@app/common';
import { CertificateAuthority, generationOf } from '../certificate-authority.service';
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

/** A generation's revocation says why; a compromise of the CA key is the one reason it has (RFC 5280 5.3.1 cACompromise). */
export const revokeGenerationSchema = z
  .object({ reason: z.enum(['cACompromise'], { message: 'is required: cACompromise (the CA key is believed compromised)' }) })
  .strict();

const CA_GENERATION_SCHEMA = {
  type: 'object' as const,
  required: ['generation', 'status', 'mode', 'keyAlgorithm', 'subject', 'notAfter', 'lastCrl'],
  properties: {
    generation: { type: 'integer' as const, example: 1 },
    status: { type: 'string' as const, enum: ['active', 'awaiting-certificate', 'retired'] },
    mode: { type: 'string' as const, enum: ['self-signed', 'subordinate'] },
    keyAlgorithm: { type: 'string' as const, example: 'EC-P256' },
    subject: { type: 'string' as const, example: 'CN=acme Issuing CA' },
    notAfter: { type: 'string' as const, format: 'date-time', nullable: true, description: 'null while awaiting its certificate' },
    compromisedAt: { type: 'string' as const, format: 'date-time', description: 'present once the generation was revoked as compromised (DECISIONS 9.1)' },
    lastCrl: {
      type: 'object' as const,
      nullable: true,
      description: "the CRL this generation's key signed last (/pki/{org}/crl for generation 1, /pki/{org}/crl/{n} after); null until one is signed",
      required: ['crlNumber', 'thisUpdate', 'nextUpdate'],
      properties: {
        crlNumber: { type: 'string' as const, example: '12' },
        thisUpdate: { type: 'string' as const, format: 'date-time' },
        nextUpdate: { type: 'string' as const, format: 'date-time' },
      },
    },
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
    const crls = current ? await this.authority.lastCrls(org) : new Map();
    const rows = [...(current ? [current] : []), ...others]
      .sort((a, b) => b.generation - a.generation)
      .map((row) => this.presenter.generation(row, crls.get(row.generation)));
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

  @Post('generations/:generation/revocation')
  @PathFormats({ generation: 'numericId' })
  @HttpCode(200)
  @Audited('ca.revoke', 'crl.publish', 'credential.revoke', 'session.end')
  @ApiOperation({
    summary:
      'Revoke a CA generation believed compromised: every certificate it issued is revoked with cACompromise (CRL at once, OCSP), their credentials revoked and smart-card sessions ended; the current generation then issues nothing until a renewal (409)',
  })
  @ApiJsonBody(revokeGenerationSchema, { reason: 'cACompromise' })
  async revokeGeneration(@Param('org') org: string, @Param('generation') generation: string, @Body() body: unknown, @RequestActor() actor: Actor) {
    const number = generationOf(generation);
    const input = parseBody(revokeGenerationSchema, body ?? {});
    const revocation = await this.authority.revokeGeneration(org, number, input.reason, actor);
    return { ...this.presenter.revocation(revocation), certificateAuthority: await this.view(org) };
  }

  private async view(org: string) {
    return this.presenter.ca(await this.authority.get(org), await this.authority.generations(org));
  }
}
