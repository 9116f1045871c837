import { Controller, Get, Headers, Res } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { Public } from '@app/common';
import { AppConfig } from '@app/config';

/**
 * The service's root (DECISIONS 1): a browser (Accept: text/html) goes to the portal; any other
 * client gets a small JSON index of where things are, instead of a 404.
 */
@ApiTags('operations')
@Public()
@Controller()
export class IndexController {
  constructor(private readonly config: AppConfig) {}

  @Get()
  @ApiOperation({ summary: 'Where things are: the portal for a browser, a JSON index (API docs, OpenAPI, discovery, health) for any other client' })
  index(@Headers('accept') accept: string | undefined, @Res({ passthrough: true }) reply: FastifyReply) {
    if (accept?.toLowerCase().includes('text/html')) {
      void reply.code(303).header('Location', '/portal/');
      return;
    }
    const base = this.config.publicBaseUrl;
    return {
      service: 'credential-platform',
      portal: `${base}/portal/`,
      apiDocs: `${base}/api-docs`,
      openApi: `${base}/api-docs-json`,
      discovery: `${this.config.authBaseUrl}/authentication/customer/{org}/.well-known/openid-configuration`,
      health: { live: `${base}/health/live`, ready: `${base}/health/ready` },
    };
  }
}
