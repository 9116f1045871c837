import { Controller, Get, Header, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiQuery, ApiTags } from '@nestjs/swagger';
import { Public, RequireAdministrator, invalidValue, notFound } from '@app/common';
import { AuditCheckpoints } from './audit-checkpoints';
import { AuditRepository } from './audit.repository';
import { AuditVerifier, ChainVerification } from './audit-verifier';

/** The audit key's public half (DECISIONS 11.2): what every checkpoint signature verifies with. */
@ApiTags('administration')
@Public()
@Controller('audit/v1/checkpoint-key')
export class AuditCheckpointKeyController {
  constructor(private readonly checkpoints: AuditCheckpoints) {}

  @Get()
  @Header('Cache-Control', 'public, max-age=300')
  @ApiOperation({
    summary: "The public key that signs the audit log's checkpoints",
    description: 'A JWK Set with one EC P-256 key (ES256); each checkpoint names it by its RFC 7638 thumbprint (kid). docs/audit-events.md, "Tamper evidence".',
  })
  async key() {
    return { keys: [await this.checkpoints.publicJwk()] };
  }
}

/**
 * GET /admin/v1/audit-verification: the platform administrator re-walks one chain (an organization's,
 * or the platform's own with no `org`) and its signed checkpoints, and learns the first event changed,
 * removed or inserted, or that everything verifies up to the last checkpoint (DECISIONS 11.2).
 */
@ApiTags('administration')
@ApiBearerAuth()
@RequireAdministrator('platform')
@Controller('admin/v1/audit-verification')
export class AuditVerificationController {
  constructor(
    private readonly verifier: AuditVerifier,
    private readonly events: AuditRepository,
  ) {}

  @Get()
  @ApiOperation({
    summary: "Verify an organization's audit hash chain and its signed checkpoints",
    description:
      "Names the first event changed, removed or inserted (problem), or answers verified with the last checkpoint everything verifies against. Without org, the chain of the platform's own events.",
  })
  @ApiQuery({ name: 'org', required: false, schema: { type: 'string' }, example: 'acme' })
  @ApiQuery({ name: 'from', required: false, schema: { type: 'integer', minimum: 1 }, example: 1 })
  async verify(@Query() query: Record<string, unknown>): Promise<ChainVerification> {
    const { org, from } = parseVerificationQuery(query);
    if (org !== null && !(await this.events.hasEventsOf(org))) {
      throw notFound(`No audit events of organization ${org}: check the organization id.`);
    }
    return this.verifier.verifyChain(org, from);
  }
}

/** `org` (optional) and `from` (a chain position, 1 when absent); anything else, or either given twice, is a 400. */
export function parseVerificationQuery(query: Record<string, unknown>): { org: string | null; from: number } {
  for (const [name, value] of Object.entries(query)) {
    if (name !== 'org' && name !== 'from') throw invalidValue(`Unknown query parameter ${name}: use org and from.`);
    if (typeof value !== 'string') throw invalidValue(`Query parameter ${name} may be given once.`);
  }
  const org = query.org as string | undefined;
  if (org !== undefined && (org.length === 0 || org.length > 128)) throw invalidValue('org must be an organization id (1 to 128 characters).');
  return { org: org ?? null, from: parseFrom(query.from as string | undefined) };
}

/** A chain position: a whole number from 1. */
export function parseFrom(value: string | undefined): number {
  if (value === undefined) return 1;
  if (!/^[1-9][0-9]{0,14}$/.test(value)) throw invalidValue(`from must be a chain position, a whole number from 1 (got "${value.slice(0, 32)}").`);
  return Number(value);
}
