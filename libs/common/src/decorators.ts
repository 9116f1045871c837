import { createParamDecorator, ExecutionContext, SetMetadata } from '@nestjs/common';
import { DomainError } from './domain-error';
import { Principal, PRINCIPAL_KEY } from './principal';

/** The only opt-out of the global bearer guard (deny by default). */
export const IS_PUBLIC = 'isPublic';
export const Public = (): MethodDecorator & ClassDecorator => SetMetadata(IS_PUBLIC, true);

export const CurrentPrincipal = createParamDecorator((_: unknown, ctx: ExecutionContext): Principal => {
  const principal = (ctx.switchToHttp().getRequest() as Record<string, unknown>)[PRINCIPAL_KEY] as Principal | undefined;
  if (!principal) throw new DomainError('UNAUTHENTICATED', 'This request needs a bearer access token.');
  return principal;
});

/** The caller's source address, after the trusted-proxy rule (set by the HTTP adapter). */
export const SourceAddress = createParamDecorator((_: unknown, ctx: ExecutionContext): string => {
  const request = ctx.switchToHttp().getRequest() as { ip?: string };
  return request.ip ?? 'unknown';
});
