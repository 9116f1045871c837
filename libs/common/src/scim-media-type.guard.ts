import { CanActivate, ExecutionContext, UseGuards } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { DomainError } from './domain-error';
import { SCIM_MEDIA_TYPE } from './scim';

/** The credential-management media type of the customer form (interface: credential-management-2.2). */
const VENDOR = /^application\/vnd\.vendor\.ma\.credential-management-(\d+)\.(\d+)\+json$/;
const JSON_TYPES = ['application/json', SCIM_MEDIA_TYPE];
const FORM = 'application/x-www-form-urlencoded';

/**
 * Media types of the SCIM families (DECISIONS 6): bodies in application/json or
 * application/scim+json (the customer form also takes the credential-management 2.x vendor type),
 * another type 415; an Accept that allows none of them 406; answers in application/scim+json unless
 * the caller asked for one of the other types, which is then echoed. A guard rather than an
 * interceptor: it decides before the handler runs and needs nothing after it (an answer without a
 * body, 204, loses its Content-Type for every route alike: apps/api/src/app.setup.ts), and a route
 * without interceptors costs Nest no rxjs pipeline per request (issue 35).
 */
export class ScimMediaTypeGuard implements CanActivate {
  /** `acceptForm`: the route also takes a form body (device actions take `reason` as a form field, DECISIONS 8). */
  constructor(private readonly options: { acceptForm?: boolean } = {}) {}

  canActivate(context: ExecutionContext): boolean {
    const http = context.switchToHttp();
    const request = http.getRequest<FastifyRequest>();
    const reply = http.getResponse<FastifyReply>();
    const contentType = mediaType(request.headers['content-type']);
    if (contentType && !acceptable(contentType) && !(this.options.acceptForm && contentType === FORM)) {
      throw new DomainError('UNSUPPORTED_MEDIA_TYPE', `Content-Type ${contentType} is not accepted here; send ${SCIM_MEDIA_TYPE} or application/json.`);
    }
    reply.header('Content-Type', answerType(request.headers.accept, contentType));
    return true;
  }
}

/** Applies the SCIM media-type rules to a controller or route. */
export const ScimMediaTypes = (options: { acceptForm?: boolean } = {}): MethodDecorator & ClassDecorator => UseGuards(new ScimMediaTypeGuard(options));

function mediaType(header: string | undefined): string | undefined {
  return header?.split(';')[0].trim().toLowerCase() || undefined;
}

function acceptable(type: string): boolean {
  const vendor = VENDOR.exec(type);
  return JSON_TYPES.includes(type) || (vendor !== null && vendor[1] === '2');
}

/** Accept entries that name no type: what curl and most HTTP libraries send when their caller chose none. */
const WILDCARDS = ['*/*', 'application/*'];

/**
 * The answer's media type: a type Accept names (application/scim+json first when it is among them).
 * When Accept names none, by its absence or with wildcards only, the caller has no preference: a
 * request sent with the vendor type as Content-Type is answered in it (CREDENTIAL-MANAGEMENT.md
 * "Open points": the interface's sample call sends only Content-Type, and curl adds `Accept: *\/*`
 * to it), any other in application/scim+json.
 */
function answerType(accept: string | undefined, contentType: string | undefined): string {
  const asked = (accept ?? '')
    .split(',')
    .map((part) => mediaType(part))
    .filter((type): type is string => type !== undefined);
  if (asked.includes(SCIM_MEDIA_TYPE)) return SCIM_MEDIA_TYPE;
  const echoed = asked.find(acceptable);
  if (echoed) return echoed;
  if (asked.length === 0 || asked.some((type) => WILDCARDS.includes(type))) {
    return contentType && VENDOR.test(contentType) && acceptable(contentType) ? contentType : SCIM_MEDIA_TYPE;
  }
  throw new DomainError('NOT_ACCEPTABLE', `Accept ${accept!.slice(0, 100)} allows no answer this API gives; accept ${SCIM_MEDIA_TYPE} or application/json.`);
}
