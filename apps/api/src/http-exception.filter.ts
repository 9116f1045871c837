import { ArgumentsHost, Catch, ExceptionFilter } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { routeFamilyOfRequest } from '@app/common';
import type { Logger } from '@app/observability';
import { toErrorResponse } from './error-response';

/** The single exception filter: every error leaves through toErrorResponse. */
@Catch()
export class HttpExceptionFilter implements ExceptionFilter {
  constructor(private readonly logger: Logger) {}

  catch(error: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    sendError(error, http.getRequest<FastifyRequest>(), http.getResponse<FastifyReply>(), this.logger);
  }
}

export function sendError(error: unknown, request: FastifyRequest, reply: FastifyReply, logger: Logger): void {
  const response = toErrorResponse(error, request, String(request.id));
  if (response.unexpected) logger.error({ err: error, reqId: request.id, url: request.routeOptions?.url }, 'unexpected error');
  const contentType =
    response.headers['Content-Type'] ?? (routeFamilyOfRequest(request).scimMediaType ? 'application/scim+json' : 'application/json; charset=utf-8');
  reply
    .status(response.status)
    .headers({ ...response.headers, 'Content-Type': contentType })
    .send(response.body);
}
