import { INTERCEPTORS_METADATA } from '@nestjs/common/constants';
import { ApplicationConfig } from '@nestjs/core';
import { AdminAccessPolicy } from '@app/accounts';
import { AccessGuard, Permission, RoleCatalog } from '@app/auth';
import { ACCESS_RULE, AccessRule } from '@app/common';
import { PERMISSION_TABLE, TestApp, createTestApp, registeredRoutes } from '@app/testing';

interface RouteRule {
  route: string;
  rule: AccessRule | undefined;
}

/** Every route the service registers, with the access rule its handler or controller declares. */
function routeRules(t: TestApp): RouteRule[] {
  return registeredRoutes(t).map(({ route, metadata }) => ({ route, rule: metadata<AccessRule>(ACCESS_RULE) }));
}

/**
 * Deny by default, checked over the whole service: every route declares a permission, a public
 * marker, or the policy its handler enforces. The snapshot (reviewed, committed) lists
 * route -> permission -> scopes, so any change of who may call what shows in review.
 */
describe('route permissions', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it('every route declares how it is authorized', () => {
    const routes = routeRules(t);
    expect(routes.length).toBeGreaterThan(10);
    expect(routes.filter((r) => r.rule === undefined).map((r) => r.route)).toEqual([]);
  });

  it('no route runs a Nest interceptor: the rules every answer follows are applied by the adapter (DECISIONS 13.3)', () => {
    const config = t.app.get(ApplicationConfig);
    expect(config.getGlobalInterceptors()).toEqual([]);
    expect(config.getGlobalRequestInterceptors().map((wrapper) => wrapper.name)).toEqual([]);
    const routes = registeredRoutes(t);
    expect(routes.length).toBeGreaterThan(10);
    expect(routes.filter((r) => r.metadata(INTERCEPTORS_METADATA) !== undefined).map((r) => r.route)).toEqual([]);
  });

  it('every administration route declares which administrators may call it (DECISIONS 11)', () => {
    const admin = routeRules(t).filter((r) => r.route.split(' ')[1].startsWith('/admin/'));
    expect(admin.length).toBeGreaterThan(20);
    expect(admin.filter((r) => r.rule?.kind !== 'administrator').map((r) => r.route)).toEqual([]);
  });

  it('every declared permission is in the catalogue, and the table of routes matches the reviewed snapshot', () => {
    const roles = t.app.get(RoleCatalog);
    const table = routeRules(t).map(({ route, rule }) => {
      if (rule?.kind === 'administrator') return `${route} -> administrator: ${rule.scope}`;
      if (rule?.kind !== 'permission') return `${route} -> ${rule?.kind === 'policy' ? `policy: ${rule.policy}` : 'public'}`;
      for (const permission of rule.permissions) expect(Object.keys(PERMISSION_TABLE)).toContain(permission);
      const scopes = rule.permissions.map((p) => PERMISSION_TABLE[p as Permission].join('+')).join(' and ');
      const grantedTo = roles
        .roles()
        .filter((role) => rule.permissions.every((p) => role.permissions.has(p as Permission)))
        .map((role) => role.name);
      return `${route} -> ${rule.permissions.join(' + ')} -> ${scopes} (default roles: ${grantedTo.join(', ')})`;
    });
    expect(table).toMatchSnapshot();
  });

  // Proven through the guard directly: no real route lacks its rule (see above).
  // Each call a new handler and controller, carrying `rule` as the decorators would (accessRuleOf remembers per route).
  const guardWith = (rule: AccessRule | undefined) => {
    const guard = new AccessGuard(t.app.get(RoleCatalog), t.app.get(AdminAccessPolicy));
    const handler = () => undefined;
    class Controller {}
    if (rule) Reflect.defineMetadata(ACCESS_RULE, rule, handler);
    return { canActivate: (url: string) => guard.canActivate(contextOf(url, handler, Controller) as never) };
  };
  const contextOf = (url: string, handler: object, controller: object) => ({
    getHandler: () => handler,
    getClass: () => controller,
    switchToHttp: () => ({ getRequest: () => ({ url, method: 'GET' }) }),
  });

  it('a route without a rule is refused even with a valid token (deny by default)', async () => {
    await expect(guardWith(undefined).canActivate('/aims/rs/scim/v2/Device/x')).rejects.toThrow(/declares no permission/);
  });

  it('an administration route that declares anything but an administrator rule is refused (deny by default)', async () => {
    for (const rule of [
      { kind: 'public' },
      { kind: 'policy', policy: 'anything' },
      { kind: 'permission', permissions: [Permission.DeviceRead] },
    ] as AccessRule[]) {
      await expect(guardWith(rule).canActivate('/admin/v1/organizations/acme/widgets')).rejects.toThrow(/declares no administrator rule/);
    }
  });
});
