import { createParamDecorator, ExecutionContext, SetMetadata } from '@nestjs/common';
import { DomainError } from './domain-error';
import { Actor, Principal, PRINCIPAL_KEY } from './principal';

/**
 * How a route is authorized: exactly one rule per route, read by the global access guard (deny by
 * default: a route without a rule is refused, and so is an /admin/ route without an administrator
 * rule) and by the test that walks every route.
 * - public: no token (token service, discovery, health, PKI publication);
 * - permission: the caller's role must grant them (scopeAssignment.properties, DECISIONS 5);
 * - administrator: the administration API's rule (DECISIONS 11), see AdministratorScope;
 * - policy: any valid token, and the handler enforces the named policy itself (whoami's "own token").
 */
export type AccessRule =
  | { kind: 'public' }
  | { kind: 'permission'; permissions: string[] }
  | { kind: 'administrator'; scope: AdministratorScope }
  | { kind: 'policy'; policy: string };
export const ACCESS_RULE = 'accessRule';

/**
 * Who may call an /admin/v1 route (DECISIONS 11). A caller that is no administrator gets 403; an
 * organization administrator naming another or an unknown organization gets 404, as if it did not
 * exist (DECISIONS 2); every refusal is written to the audit log.
 * - platform: the platform administrator only (managing organizations);
 * - any: any administrator, platform or organization (reading the role mapping);
 * - organization: the administrator of the organization in the route's `:org` (the platform
 *   administrator acts in any); the organization must exist;
 * - organization-record: as organization, but the platform administrator may also name an
 *   organization that was deleted, whose audit events are kept as its record.
 */
export type AdministratorScope = 'platform' | 'any' | 'organization' | 'organization-record';

export const Public = (): MethodDecorator & ClassDecorator => SetMetadata(ACCESS_RULE, { kind: 'public' } satisfies AccessRule);
/** The caller's role must grant every permission listed (most routes list one). */
export const RequirePermission = (...permissions: [string, ...string[]]): MethodDecorator & ClassDecorator =>
  SetMetadata(ACCESS_RULE, { kind: 'permission', permissions } satisfies AccessRule);
/** An administration API route (DECISIONS 11); `organization` routes take the organization from `:org`. */
export const RequireAdministrator = (scope: AdministratorScope): MethodDecorator & ClassDecorator =>
  SetMetadata(ACCESS_RULE, { kind: 'administrator', scope } satisfies AccessRule);
export const AuthorizedBy = (policy: string): MethodDecorator & ClassDecorator => SetMetadata(ACCESS_RULE, { kind: 'policy', policy } satisfies AccessRule);

/**
 * What a route declares under `key` (its method's, else its controller's), as Nest's
 * `Reflector.getAllAndOverride` reads it, looked up once per route: global guards ask on every
 * request, and a route's metadata does not change after the application starts (issue 35).
 */
export function routeDeclaration<T>(key: string): (context: ExecutionContext) => T | undefined {
  // By handler, then by controller (an inherited handler may serve several); null: none declared.
  const declarations = new WeakMap<object, WeakMap<object, T | null>>();
  return (context) => {
    const handler = context.getHandler();
    const controller = context.getClass();
    let byController = declarations.get(handler);
    if (byController === undefined) declarations.set(handler, (byController = new WeakMap()));
    let declared = byController.get(controller);
    if (declared === undefined) {
      declared = (Reflect.getMetadata(key, handler) ?? Reflect.getMetadata(key, controller) ?? null) as T | null;
      byController.set(controller, declared);
    }
    return declared ?? undefined;
  };
}

/** The access rule of the route a request reached; the global guards read it. */
export const accessRuleOf = routeDeclaration<AccessRule>(ACCESS_RULE);

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

/** The request's id, sent back as X-Correlation-ID and written into the request's audit events. */
export const CorrelationId = createParamDecorator((_: unknown, ctx: ExecutionContext): string => {
  return String((ctx.switchToHttp().getRequest() as { id?: unknown }).id ?? '');
});

/**
 * Who changes something, for the audit log: the caller's Client ID or userName, source address and
 * the request's correlation id. Passed explicitly rather than through AsyncLocalStorage, which on
 * Node 20 doubled the service's CPU per request (measured: probe 45 -> 85 us).
 */
export const RequestActor = createParamDecorator((_: unknown, ctx: ExecutionContext): Actor => {
  const request = ctx.switchToHttp().getRequest() as Record<string, unknown> & { ip?: string; id?: unknown };
  const principal = request[PRINCIPAL_KEY] as Principal | undefined;
  if (!principal) throw new DomainError('UNAUTHENTICATED', 'This request needs a bearer access token.');
  return { name: principal.name, principal, sourceAddress: request.ip ?? 'unknown', correlationId: String(request.id ?? '') };
});
