import { Controller, Get, Headers, Param, Res } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { Public } from '@app/common';
import { CertificateAuthority } from '../certificate-authority.service';

/**
 * What relying parties fetch without a token or Application-ID (CREDENTIAL-MANAGEMENT.md, "PKI"):
 * the CA certificate and the CRL, both DER.
 */
@ApiTags('pki')
@Public()
@Controller('pki/:org')
export class PkiPublicController {
  constructor(private readonly authority: CertificateAuthority) {}

  @Get('ca.crt')
  @ApiOperation({ summary: "The organization's CA certificate (DER)" })
  async caCertificate(@Param('org') org: string, @Res({ passthrough: true }) reply: FastifyReply) {
    const der = await this.authority.caCertificate(org);
    reply.header('Content-Type', 'application/pkix-cert').header('Cache-Control', 'public, max-age=3600');
    return der;
  }

  @Get('crl')
  @ApiOperation({ summary: "The organization's CRL (DER, v2, re-signed within a second of a change and at least daily)" })
  async crl(@Param('org') org: string, @Headers('if-none-match') ifNoneMatch: string | undefined, @Res({ passthrough: true }) reply: FastifyReply) {
    const crl = await this.authority.crl(org);
    const etag = `"crl-${crl.crl_number}"`;
    const maxAge = Math.max(0, Math.floor((crl.next_update.getTime() - Date.now()) / 1000));
    reply
      .header('ETag', etag)
      .header('Cache-Control', `public, max-age=${Math.min(maxAge, 3600)}`)
      .header('Last-Modified', crl.this_update.toUTCString());
    if (ifNoneMatch === etag) {
      reply.status(304);
      return undefined;
    }
    reply.header('Content-Type', 'application/pkix-crl');
    return crl.der;
  }
}
