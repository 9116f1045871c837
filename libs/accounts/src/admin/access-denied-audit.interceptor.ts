import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import { Observable, catchError, from, mergeMap, throwError } from 'rxjs';
import { PRINCIPAL_KEY, Principal } from '@app/common';
import { AuditService } from '../audit/audit.service';
import { AccessDeniedError } from './admin-access.policy';

/** The request path without its query, at most this long, as the event's target. */
const MAX_TARGET = 256;

/**
 * Records refusals of the admin access policy as security events (DECISIONS 11): a caller that is
 * no administrator (403), or an organization administrator reaching into another organization
 * (404). The event belongs to the caller's organization, whose administrators can see what its
 * accounts attempted; the refused organization learns nothing. The answer is sent after the event
 * is written, so the log is complete when the caller sees the refusal.
 */
@Injectable()
export class AccessDeniedAuditInterceptor implements NestInterceptor {
  constructor(private readonly audit: AuditService) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return next.handle().pipe(catchError((error: unknown) => from(this.recordDenied(context, error)).pipe(mergeMap(() => throwError(() => error)))));
  }

  private async recordDenied(context: ExecutionContext, error: unknown): Promise<void> {
    if (!(error instanceof AccessDeniedError)) return;
    const request = context
      .switchToHttp()
      .getRequest<{ method: string; url: string; ip?: string; routeOptions?: { url?: string } } & Record<string, unknown>>();
    const principal = request[PRINCIPAL_KEY] as Principal | undefined;
    if (!principal) return;
    await this.audit.record({
      org: principal.org,
      actor: principal.name,
      action: 'admin.access_denied',
      target: request.url.split('?')[0].slice(0, MAX_TARGET),
      outcome: 'failure',
      sourceAddress: request.ip,
      details: { method: request.method, route: request.routeOptions?.url, status: error.code === 'FORBIDDEN' ? 403 : 404 },
    });
  }
}
