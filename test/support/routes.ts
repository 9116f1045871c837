import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { RequestMethod } from '@nestjs/common';
import { ModulesContainer } from '@nestjs/core';
import type { TestApp } from './test-app';

/** One registered route: method and path as Nest mounts them, and the metadata of its handler and controller. */
export interface RegisteredRoute {
  /** `GET /aims/rs/scim/v2/Device/:id` */
  route: string;
  method: string;
  path: string;
  /** `DeviceController.get`: the handler, the same on each path it is mounted on. */
  handler: string;
  /** The handler's metadata under `key`, else its controller's. */
  metadata<T>(key: string): T | undefined;
}

/** Every route the service registers, sorted; a handler mounted on several paths (the /scim/ and /scm/ aliases) once per path. */
export function registeredRoutes(t: TestApp): RegisteredRoute[] {
  const routes: RegisteredRoute[] = [];
  for (const module of t.app.get(ModulesContainer).values()) {
    for (const wrapper of module.controllers.values()) {
      const controller = wrapper.metatype as (new () => unknown) | null;
      if (!controller) continue;
      const bases = [Reflect.getMetadata(PATH_METADATA, controller) ?? ''].flat().map(String);
      for (const name of Object.getOwnPropertyNames(controller.prototype)) {
        const handler = controller.prototype[name];
        if (name === 'constructor' || typeof handler !== 'function' || Reflect.getMetadata(PATH_METADATA, handler) === undefined) continue;
        const method = RequestMethod[Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod];
        const metadata = <T>(key: string) => (Reflect.getMetadata(key, handler) ?? Reflect.getMetadata(key, controller)) as T | undefined;
        for (const base of bases) {
          for (const sub of [Reflect.getMetadata(PATH_METADATA, handler)].flat().map(String)) {
            const path = `/${[base, sub].filter((p) => p && p !== '/').join('/')}`.replace(/\/+/g, '/');
            routes.push({ route: `${method} ${path}`, method, path, handler: `${controller.name}.${name}`, metadata });
          }
        }
      }
    }
  }
  return routes.sort((a, b) => a.route.localeCompare(b.route));
}
