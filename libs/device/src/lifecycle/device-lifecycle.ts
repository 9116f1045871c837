/**
 * The device lifecycle of DECISIONS 8, in one table: every move a device can make, what triggers it,
 * from which statuses, to which status, and what the resulting `status.reason` may be. The service
 * decides every action from this table; the e2e suite walks it (every legal and every illegal move
 * of each entry point); libs/device/LIFECYCLE.md is rendered from it and a unit test fails when the
 * two differ.
 */
export const DEVICE_STATUSES = ['AVAILABLE', 'ASSIGNED', 'PRODUCED', 'ISSUED', 'ON_HOLD', 'REVOKED', 'TERMINATED'] as const;
export type DeviceStatus = (typeof DEVICE_STATUSES)[number];

export const DEVICE_REASONS = ['NONE', 'RECYCLE', 'ASSIGNED', 'LOST', 'STOLEN', 'DAMAGED', 'FORGOTTEN', 'RENEW', 'EXPIRED', 'UNASSIGNED', 'FAILED'] as const;
export type DeviceReason = (typeof DEVICE_REASONS)[number];

/** Entry points of the Device resource that move (or remove) a device. */
export const DEVICE_ACTIONS = ['activate', 'suspend', 'resume', 'revoke', 'terminate', 'delete'] as const;
export type DeviceAction = (typeof DEVICE_ACTIONS)[number];

/** Moves made by content requests and sync sessions (CREDENTIAL-MANAGEMENT.md), not by a Device entry point. */
export type DeviceEvent = 'bind' | 'unbind' | 'completeIssuance' | 'completeProduce' | 'recycle';

export interface ReasonRule {
  /** The caller must give a reason (suspend: why the device is on hold). */
  required: boolean;
  /** The reasons the caller may give; empty: the reason is fixed to `default`. */
  allowed: readonly DeviceReason[];
  /** The resulting status.reason when the caller gives none. */
  default: DeviceReason;
}

export interface DeviceTransition {
  trigger: DeviceAction | DeviceEvent;
  /** How the move is asked for. */
  via: string;
  from: readonly DeviceStatus[];
  /** The next status; null: the device is removed. */
  to: DeviceStatus | null;
  reason: ReasonRule;
  /** The device loses its owner (it is unassigned). */
  clearsOwner: boolean;
  /** issuanceDate is set, if the device has none yet. */
  setsIssuanceDate: boolean;
  /** What else happens, for the docs. */
  effect: string;
}

const FIXED = (reason: DeviceReason): ReasonRule => ({ required: false, allowed: [], default: reason });

/** DECISIONS 8, row by row. */
export const DEVICE_LIFECYCLE: readonly DeviceTransition[] = [
  {
    trigger: 'bind',
    via: 'an issuance or produce content request is created for the device',
    from: ['AVAILABLE'],
    to: 'ASSIGNED',
    reason: FIXED('ASSIGNED'),
    clearsOwner: false,
    setsIssuanceDate: false,
    effect: 'bound to the wallet owner, who becomes the device owner',
  },
  {
    trigger: 'unbind',
    via: 'that content request is cancelled or denied',
    from: ['ASSIGNED'],
    to: 'AVAILABLE',
    reason: FIXED('UNASSIGNED'),
    clearsOwner: true,
    setsIssuanceDate: false,
    effect: 'back in stock',
  },
  {
    trigger: 'completeIssuance',
    via: 'a sync session completes an issuance',
    from: ['ASSIGNED'],
    to: 'ISSUED',
    reason: FIXED('NONE'),
    clearsOwner: false,
    setsIssuanceDate: true,
    effect: 'credentials ISSUED; issuanceDate set',
  },
  {
    trigger: 'completeProduce',
    via: 'a sync session completes a produce request',
    from: ['ASSIGNED'],
    to: 'PRODUCED',
    reason: FIXED('NONE'),
    clearsOwner: false,
    setsIssuanceDate: false,
    effect: 'credentials ON_HOLD until activate',
  },
  {
    trigger: 'activate',
    via: 'POST /Device/{id}/activate',
    from: ['PRODUCED'],
    to: 'ISSUED',
    reason: { required: false, allowed: ['NONE'], default: 'NONE' },
    clearsOwner: false,
    setsIssuanceDate: true,
    effect: 'credentials ISSUED; issuanceDate set',
  },
  {
    trigger: 'suspend',
    via: 'POST /Device/{id}/suspend',
    from: ['ISSUED'],
    to: 'ON_HOLD',
    reason: { required: true, allowed: ['LOST', 'STOLEN', 'DAMAGED', 'FORGOTTEN'], default: 'NONE' },
    clearsOwner: false,
    setsIssuanceDate: false,
    effect: 'credentials ON_HOLD',
  },
  {
    trigger: 'resume',
    via: 'POST /Device/{id}/resume',
    from: ['ON_HOLD'],
    to: 'ISSUED',
    reason: { required: false, allowed: ['NONE'], default: 'NONE' },
    clearsOwner: false,
    setsIssuanceDate: false,
    effect: 'credentials ISSUED',
  },
  {
    trigger: 'revoke',
    via: 'POST /Device/{id}/revoke',
    from: ['ISSUED', 'ON_HOLD'],
    to: 'REVOKED',
    reason: { required: false, allowed: ['NONE', 'LOST', 'STOLEN', 'DAMAGED', 'RENEW', 'EXPIRED'], default: 'NONE' },
    clearsOwner: false,
    setsIssuanceDate: false,
    effect: 'credentials REVOKED, irreversibly',
  },
  {
    trigger: 'terminate',
    via: 'POST /Device/{id}/terminate',
    from: ['ISSUED', 'ON_HOLD', 'REVOKED', 'PRODUCED'],
    to: 'TERMINATED',
    reason: { required: false, allowed: ['NONE', 'LOST', 'STOLEN', 'DAMAGED', 'RENEW', 'EXPIRED', 'UNASSIGNED'], default: 'UNASSIGNED' },
    clearsOwner: true,
    setsIssuanceDate: false,
    effect: 'credentials REVOKED; the device is unassigned',
  },
  {
    trigger: 'recycle',
    via: 'a recycle content request completes',
    from: ['TERMINATED', 'AVAILABLE'],
    to: 'AVAILABLE',
    reason: FIXED('RECYCLE'),
    clearsOwner: true,
    setsIssuanceDate: false,
    effect: 'credentials removed from the wallet; back in stock',
  },
  {
    trigger: 'delete',
    via: 'DELETE /Device/{id}',
    from: ['AVAILABLE'],
    to: null,
    reason: FIXED('NONE'),
    clearsOwner: false,
    setsIssuanceDate: false,
    effect: 'the device is removed',
  },
];

export function transitionOf(trigger: DeviceAction | DeviceEvent): DeviceTransition {
  const transition = DEVICE_LIFECYCLE.find((t) => t.trigger === trigger);
  if (!transition) throw new Error(`No transition for ${trigger}`);
  return transition;
}

/** The status after `trigger` on a device in `status`; undefined when the move is not allowed (409). */
export function nextStatus(status: DeviceStatus, trigger: DeviceAction | DeviceEvent): DeviceStatus | null | undefined {
  const transition = transitionOf(trigger);
  return transition.from.includes(status) ? transition.to : undefined;
}

export type ReasonCheck = { ok: true; reason: DeviceReason } | { ok: false; problem: string };

/** The resulting status.reason of `trigger` given what the caller sent, or why it is refused (400). */
export function resolveReason(trigger: DeviceAction | DeviceEvent, given: DeviceReason | undefined): ReasonCheck {
  const { reason } = transitionOf(trigger);
  if (given === undefined) {
    return reason.required ? { ok: false, problem: `${trigger} needs a reason: one of ${reason.allowed.join(', ')}` } : { ok: true, reason: reason.default };
  }
  if (reason.allowed.length === 0) return { ok: false, problem: `${trigger} takes no reason` };
  if (!reason.allowed.includes(given)) return { ok: false, problem: `reason ${given} does not apply to ${trigger}; use one of ${reason.allowed.join(', ')}` };
  return { ok: true, reason: given };
}
