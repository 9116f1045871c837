import { Body, Controller, Delete, Get, HttpCode, Param, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Audited } from '@app/audit';
import { Actor, ApiJsonBody, RequestActor, RequireAdministrator, listResponse, parseBody, z } from '@app/common';
import { presentSigningKey, presentWithdrawal } from '../signing-keys/signing-key.presenter';
import type { SigningKeyRow } from '../signing-keys/signing-key.repository';
import { SigningKeys } from '../signing-keys/signing-keys.service';

const generateSchema = z
  .object({
    algorithm: z.enum(['EC-P256', 'RSA-3072'], { message: 'must be EC-P256 (ES256) or RSA-3072 (RS256)' }),
  })
  .strict();

const activateSchema = z
  .object({
    at: z.iso.datetime({ offset: true, message: 'must be an ISO 8601 date-time such as 2030-01-01T00:00:00Z' }).optional(),
  })
  .strict();

const withdrawSchema = z
  .object({
    reason: z
      .string({ message: 'must say why the key is withdrawn (for the audit log), 1-500 characters' })
      .trim()
      .min(1, { message: 'must say why the key is withdrawn (for the audit log), 1-500 characters' })
      .max(500, { message: 'must be at most 500 characters' }),
  })
  .strict();

/**
 * The token-signing keys (DECISIONS 12.1): the platform administrator generates a next key, activates
 * it (now or at a stated time) once JWKS has published it for JWKS_PUBLICATION_DELAY_S, retires
 * next keys, and withdraws a key believed compromised at once.
 */
@ApiTags('administration')
@ApiBearerAuth()
@RequireAdministrator('platform')
@Controller('admin/v1/signing-keys')
export class SigningKeysController {
  constructor(private readonly keys: SigningKeys) {}

  @Get()
  @ApiOperation({ summary: 'List the token-signing keys: next, active and retired, oldest first (platform administrator)' })
  async list() {
    const rows = await this.keys.list();
    return listResponse(
      rows.map((row) => this.view(row)),
      rows.length,
      { startIndex: 1, count: rows.length },
    );
  }

  @Post()
  @Audited('signing_key.generate')
  @ApiOperation({ summary: 'Generate a next key in the HSM: published in JWKS at once, activatable after the publication delay' })
  @ApiJsonBody(generateSchema, { algorithm: 'EC-P256' })
  async generate(@Body() body: unknown, @RequestActor() actor: Actor) {
    const input = parseBody(generateSchema, body);
    return this.view(await this.keys.generate(input.algorithm, actor));
  }

  @Post(':kid/activate')
  @HttpCode(200)
  @Audited('signing_key.activate', 'signing_key.retire', 'signing_key.schedule')
  @ApiOperation({
    summary: 'Make a next key the active one now, or at `at` (409 before its publication delay has passed); the active key retires',
  })
  @ApiJsonBody(activateSchema, { at: '2030-01-01T00:00:00Z' })
  async activate(@Param('kid') kid: string, @Body() body: unknown, @RequestActor() actor: Actor) {
    const input = parseBody(activateSchema, body ?? {});
    return this.view(await this.keys.activate(kid, input.at === undefined ? undefined : new Date(input.at), actor));
  }

  @Post(':kid/retire')
  @HttpCode(200)
  @Audited('signing_key.retire')
  @ApiOperation({ summary: 'Withdraw a next key (it leaves JWKS at once); the active key retires only by activating another (409)' })
  async retire(@Param('kid') kid: string, @RequestActor() actor: Actor) {
    return this.view(await this.keys.retire(kid, actor));
  }

  @Post(':kid/withdraw')
  @HttpCode(200)
  @Audited('signing_key.withdraw', 'signing_key.generate', 'signing_key.activate')
  @ApiOperation({
    summary:
      'Emergency withdrawal of a key believed compromised: out of JWKS and its tokens refused at once; the active key is replaced by a new key, active without a publication delay',
  })
  @ApiJsonBody(withdrawSchema, { reason: 'HSM backup tape lost' })
  async withdraw(@Param('kid') kid: string, @Body() body: unknown, @RequestActor() actor: Actor) {
    const input = parseBody(withdrawSchema, body ?? {});
    return presentWithdrawal(await this.keys.withdraw(kid, input.reason, actor), (row) => this.keys.activatableAt(row));
  }

  @Delete(':kid')
  @HttpCode(204)
  @Audited('signing_key.destroy')
  @ApiOperation({ summary: "Destroy a retired key's HSM object once it has left JWKS (409 before); without this it is kept" })
  async destroy(@Param('kid') kid: string, @RequestActor() actor: Actor): Promise<void> {
    await this.keys.destroy(kid, actor);
  }

  private view(row: SigningKeyRow) {
    return presentSigningKey(row, this.keys.activatableAt(row));
  }
}
