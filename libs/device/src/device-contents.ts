import { Injectable } from '@nestjs/common';
import { ChangeFeed, Transaction } from '@app/persistence';
import { publishDeviceChanges } from './device-changes';
import type { DeviceRow } from './device.repository';

/** A credential on a device, as the device shows it (a reference with its type and status). */
export interface CarriedCredential {
  id: string;
  type: string;
  status: string;
}

/** What a device carries (CREDENTIAL-MANAGEMENT.md "Resources", Device row): the device policy it was issued under and its credentials. */
export interface DeviceContent {
  policyId: string | null;
  credentials: readonly CarriedCredential[];
}

/** A device as answers show it: its row and what it carries. */
export interface DeviceView {
  row: DeviceRow;
  content: DeviceContent;
}

/** A device in stock, or one whose contents nobody supplies (the command line). */
export const NO_CONTENT: DeviceContent = Object.freeze({ policyId: null, credentials: Object.freeze([]) });

/** The contents of a page of devices of one organization, in one lookup; a device absent from the map carries nothing. */
export type DeviceContentSource = (orgId: string, deviceIds: readonly string[]) => Promise<Map<string, DeviceContent>>;

/**
 * What devices carry, supplied by the library that puts it on them (credential management: the
 * credentials and the device policy of the request that issued them), so that the device library
 * shows them without knowing their tables. The device's read cache keeps them with the device: every
 * device move already publishes the device's change, and a change of what a device carries that
 * moves no device (an update request superseding credentials) is told through `changed`, in its
 * transaction, so that every instance drops what it kept of the device with the commit.
 */
@Injectable()
export class DeviceContents {
  private source?: DeviceContentSource;

  constructor(private readonly changes: ChangeFeed) {}

  register(source: DeviceContentSource): void {
    if (this.source) throw new Error('DeviceContents: a source is already registered; one library supplies what devices carry.');
    this.source = source;
  }

  /** The contents of these devices, in one lookup; devices carrying nothing are left out. */
  of(orgId: string, deviceIds: readonly string[]): Promise<Map<string, DeviceContent>> {
    if (!this.source || deviceIds.length === 0) return Promise.resolve(new Map());
    return this.source(orgId, deviceIds);
  }

  /** What these devices carry changed in `tx`: with its commit, every instance drops what it kept of them. */
  changed(orgId: string, deviceIds: readonly string[], tx: Transaction): void {
    publishDeviceChanges(this.changes, tx, orgId, deviceIds);
  }
}
