import { Controller, Get, Module } from '@nestjs/common';
import { ALL_PERMISSIONS, Permission } from '@app/auth';
import { RequirePermission } from '@app/common';

/**
 * Test-only: one GET route per permission, /probe/{permission}, declared with the real decorator so
 * the real global guards decide. Real resource routes are covered by the route snapshot.
 */
class PermissionProbeController {}

for (const permission of ALL_PERMISSIONS) {
  const handler = function (this: unknown) {
    return { permission };
  };
  Object.defineProperty(PermissionProbeController.prototype, permission, { value: handler, writable: true, configurable: true });
  const descriptor = Object.getOwnPropertyDescriptor(PermissionProbeController.prototype, permission)!;
  RequirePermission(permission)(PermissionProbeController.prototype, permission, descriptor);
  Get(permission)(PermissionProbeController.prototype, permission, descriptor);
}
Controller('probe')(PermissionProbeController);

@Module({ controllers: [PermissionProbeController] })
export class PermissionProbeModule {}

export const probePath = (permission: Permission): string => `/probe/${permission}`;
