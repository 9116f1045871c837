import { CallHandler, ExecutionContext, Injectable, NestInterceptor, UseInterceptors } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { Observable } from 'rxjs';
import { ScimMediaTypeInterceptor } from '@app/common';

const FORM = 'application/x-www-form-urlencoded';

/**
 * The SCIM media-type rules (DECISIONS 6) for the device actions, which also take their `reason` as a
 * form field (DECISIONS 8). A form body passes; the Accept rules and the answer's Content-Type stay
 * those of ScimMediaTypeInterceptor, which sees the request without its form Content-Type.
 */
@Injectable()
export class DeviceActionMediaTypeInterceptor implements NestInterceptor {
  private readonly scim = new ScimMediaTypeInterceptor();

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    const type = request.headers['content-type']?.split(';')[0].trim().toLowerCase();
    if (type !== FORM) return this.scim.intercept(context, next);
    const http = context.switchToHttp();
    const withoutForm = {
      switchToHttp: () => ({ getRequest: () => ({ headers: { accept: request.headers.accept } }), getResponse: () => http.getResponse(), getNext: () => http.getNext() }),
    } as unknown as ExecutionContext;
    return this.scim.intercept(withoutForm, next);
  }
}

export const DeviceActionMediaTypes = (): MethodDecorator & ClassDecorator => UseInterceptors(DeviceActionMediaTypeInterceptor);
