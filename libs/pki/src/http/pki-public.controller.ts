import { Body, Controller, Get, Headers, HttpCode, Param, Post, Res } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { NotAudited } from '@app/audit';
import { DomainError, PathFormats, Public } from '@app/common';
import { OcspResponder } from '../ocsp-responder';
import { CertificateAuthority } from '../certificate-authority.service';
import type { PublishedCrl } from '../certificate-authority.repository';
import { pem } from './ca.presenter';

/**
 * What relying parties fetch without a token or Application-ID (CREDENTIAL-MANAGEMENT.md, "PKI"):
 * the CA certificate and the CRL, both DER, of the current generation and of each earlier one a
 * renewal retired, the chain linking the generations (PEM), and OCSP.
 */
@ApiTags('pki')
@Public()
@PathFormats({ request: 'ocspRequest', generation: 'numericId' })
@Controller('pki/:org')
export class PkiPublicController {
  constructor(
    private readonly authority: CertificateAuthority,
    private readonly ocsp: OcspResponder,
  ) {}

  @Get('ca.crt')
  @ApiOperation({ summary: "The organization's CA certificate (DER)" })
  async caCertificate(@Param('org') org: string, @Res({ passthrough: true }) reply: FastifyReply) {
    const der = await this.authority.caCertificate(org);
    reply.header('Content-Type', 'application/pkix-cert').header('Cache-Control', 'public, max-age=3600');
    return der;
  }

  @Get('ca/:generation.crt')
  @ApiOperation({ summary: 'The CA certificate (DER) of one generation, current or retired: the caIssuers URL of the certificates of generations 2 and later' })
  async generationCertificate(@Param('org') org: string, @Param('generation') generation: string, @Res({ passthrough: true }) reply: FastifyReply) {
    const der = await this.authority.caCertificate(org, Number(generation));
    reply.header('Content-Type', 'application/pkix-cert').header('Cache-Control', 'public, max-age=3600');
    return der;
  }

  @Get('ca-chain.pem')
  @ApiOperation({
    summary: 'The current CA certificate, then for each retired generation its cross-certificates (new-with-old, old-with-new) and its certificate (PEM)',
  })
  async chain(@Param('org') org: string, @Res({ passthrough: true }) reply: FastifyReply) {
    const chain = await this.authority.chain(org);
    reply.header('Content-Type', 'application/pem-certificate-chain').header('Cache-Control', 'public, max-age=3600');
    return chain.map((der) => pem('CERTIFICATE', der)).join('');
  }

  @Get('crl')
  @ApiOperation({
    summary:
      "The CRL of the CA's first generation (DER, v2, re-signed within a second of a change and at least daily): the CRL of every organization that never renewed its CA",
  })
  async crl(@Param('org') org: string, @Headers('if-none-match') ifNoneMatch: string | undefined, @Res({ passthrough: true }) reply: FastifyReply) {
    return this.sendCrl(reply, await this.authority.crl(org), ifNoneMatch);
  }

  @Get('crl/:generation')
  @ApiOperation({ summary: 'The CRL of one CA generation (DER), signed by its key: the CRL distribution point of the certificates of generations 2 and later' })
  async generationCrl(
    @Param('org') org: string,
    @Param('generation') generation: string,
    @Headers('if-none-match') ifNoneMatch: string | undefined,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    return this.sendCrl(reply, await this.authority.crl(org, Number(generation)), ifNoneMatch);
  }

  private sendCrl(reply: FastifyReply, crl: PublishedCrl, ifNoneMatch: string | undefined) {
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

  @Post('ocsp')
  @HttpCode(200)
  @NotAudited('an OCSP answer changes nothing')
  @ApiOperation({ summary: 'RFC 6960 OCSP (POST, Content-Type application/ocsp-request): good, revoked with time and reason, or unknown; nonce echoed' })
  async ocspPost(@Param('org') org: string, @Body() body: unknown, @Res({ passthrough: true }) reply: FastifyReply) {
    if (!Buffer.isBuffer(body)) throw new DomainError('INVALID_VALUE', 'Send the DER OCSP request with Content-Type application/ocsp-request.');
    reply.header('Content-Type', 'application/ocsp-response').header('Cache-Control', 'no-store');
    return this.ocsp.respond(org, body);
  }

  @Get('ocsp/:request')
  @ApiOperation({ summary: 'RFC 6960 OCSP by GET: the DER request in base64 (URL-encoded) or base64url in the path' })
  async ocspGet(@Param('org') org: string, @Param('request') request: string, @Res({ passthrough: true }) reply: FastifyReply) {
    const der = Buffer.from(decodeURIComponent(request).replace(/-/g, '+').replace(/_/g, '/'), 'base64');
    reply.header('Content-Type', 'application/ocsp-response').header('Cache-Control', 'public, max-age=60');
    return this.ocsp.respond(org, der);
  }
}
