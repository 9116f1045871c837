import { createParamDecorator, ExecutionContext, SetMetadata } from '@nestjs/common';
import { DomainError } from './domain-error';
import { Principal, PRINCIPAL_KEY } from './principal';

/**
 * How a route is authorized: exactly one rule per route, read by the global guards (deny by default:
 * a route without a rule is refused) and by the test that walks every route.
 * - public: no token (token service, discovery, health);
 * - permission: the caller's role must grant them (scopeAssignment.properties, DECISIONS 5);
 * - policy: any valid token, and the handler enforces the named policy itself (the admin API's
 *   administrator rules, whoami's "your own token").
 */
export type AccessRule = { kind: 'public' } | { kind: 'permission'; permissions: string[] } | { kind: 'policy'; policy: string };
export const ACCESS_RULE = 'accessRule';

export const Public = (): MethodDecorator & ClassDecorator => SetMetadata(ACCESS_RULE, { kind: 'public' } satisfies AccessRule);
/** The caller's role must grant every permission listed (most routes list one). */
export const RequirePermission = (...permissions: [string, ...string[]]): MethodDecorator & ClassDecorator =>
  SetMetadata(ACCESS_RULE, { kind: 'permission', permissions } satisfies AccessRule);
export const AuthorizedBy = (policy: string): MethodDecorator & ClassDecorator => SetMetadata(ACCESS_RULE, { kind: 'policy', policy } satisfies AccessRule);

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
