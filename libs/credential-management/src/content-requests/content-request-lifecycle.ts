import type { AuditAction } from '@app/audit';

/**
 * The ContentRequest lifecycle of CREDENTIAL-MANAGEMENT.md, in one table: every move a request can
 * make, what asks for it, from which statuses, to which status, and whether its device goes back to
 * stock. The service decides every move from this table; CONTENT-REQUESTS.md is rendered from it and a
 * unit test fails when the two differ.
 */
export const CONTENT_REQUEST_STATUSES = ['requested', 'approved', 'completed', 'denied', 'cancelled', 'failed', 'expired'] as const;
export type ContentRequestStatus = (typeof CONTENT_REQUEST_STATUSES)[number];

/**
 * Statuses that hold the target device: at most one request per device is in one of them (a unique
 * index). `failed` is open because `retry` reopens it.
 */
export const OPEN_STATUSES = ['requested', 'approved', 'failed'] as const satisfies readonly ContentRequestStatus[];

export const CONTENT_REQUEST_TYPES = ['issuance', 'produce', 'recycle', 'unlock pin', 'update'] as const;
export type ContentRequestType = (typeof CONTENT_REQUEST_TYPES)[number];

/** The entry points that move a request (POST /ContentRequest/{id}/{action}, DELETE, PATCH). */
export const CONTENT_REQUEST_ACTIONS = ['approve', 'deny', 'cancel', 'retry'] as const;
export type ContentRequestAction = (typeof CONTENT_REQUEST_ACTIONS)[number];

/** Moves the platform makes: a sync session's outcome, and expiry. */
export type ContentRequestEvent = 'delete' | 'patch' | 'complete' | 'fail' | 'expire';

export interface ContentRequestTransition {
  trigger: ContentRequestAction | ContentRequestEvent;
  via: string;
  from: readonly ContentRequestStatus[];
  to: ContentRequestStatus;
  /** The device an issuance or produce request bound goes back to stock (ASSIGNED -> AVAILABLE). */
  releasesDevice: boolean;
  audit: AuditAction;
  effect: string;
}

export const CONTENT_REQUEST_LIFECYCLE: readonly ContentRequestTransition[] = [
  {
    trigger: 'approve',
    via: 'POST /ContentRequest/{id}/approve',
    from: ['requested'],
    to: 'approved',
    releasesDevice: false,
    audit: 'content_request.approve',
    effect: 'four eyes: the approver is neither the requester nor the wallet owner',
  },
  {
    trigger: 'deny',
    via: 'POST /ContentRequest/{id}/deny',
    from: ['requested'],
    to: 'denied',
    releasesDevice: true,
    audit: 'content_request.deny',
    effect: 'same four-eyes rule as approve',
  },
  {
    trigger: 'cancel',
    via: 'POST /ContentRequest/{id}/cancel',
    from: ['requested', 'approved', 'failed'],
    to: 'cancelled',
    releasesDevice: true,
    audit: 'content_request.cancel',
    effect: '',
  },
  {
    trigger: 'delete',
    via: 'DELETE /ContentRequest/{id}',
    from: ['requested', 'approved', 'failed'],
    to: 'cancelled',
    releasesDevice: true,
    audit: 'content_request.cancel',
    effect: 'answers 204; the request stays readable',
  },
  {
    trigger: 'retry',
    via: 'POST /ContentRequest/{id}/retry',
    from: ['failed'],
    to: 'approved',
    releasesDevice: false,
    audit: 'content_request.retry',
    effect: 'the failure is cleared',
  },
  {
    trigger: 'patch',
    via: 'PATCH /ContentRequest/{id}',
    from: ['requested'],
    to: 'requested',
    releasesDevice: false,
    audit: 'content_request.update',
    effect: 'reason, parameters, expiresAt (earlier only)',
  },
  {
    trigger: 'complete',
    via: 'a sync session reports success',
    from: ['approved'],
    to: 'completed',
    releasesDevice: false,
    audit: 'content_request.complete',
    effect: 'the device moves as the request type says',
  },
  {
    trigger: 'fail',
    via: 'a sync session reports a failure',
    from: ['approved'],
    to: 'failed',
    releasesDevice: false,
    audit: 'content_request.fail',
    effect: 'device and wallet unchanged; the detail is kept',
  },
  {
    trigger: 'expire',
    via: 'expiresAt passed: seen on the next read, and by the periodic sweep',
    from: ['requested', 'approved', 'failed'],
    to: 'expired',
    releasesDevice: true,
    audit: 'content_request.expire',
    effect: '',
  },
];

export function requestTransitionOf(trigger: ContentRequestTransition['trigger']): ContentRequestTransition {
  const transition = CONTENT_REQUEST_LIFECYCLE.find((t) => t.trigger === trigger);
  if (!transition) throw new Error(`No content request transition for ${trigger}`);
  return transition;
}

/** issuance and produce bind their device to the wallet's owner at creation; the others leave it where it is. */
export function bindsDevice(type: ContentRequestType): boolean {
  return type === 'issuance' || type === 'produce';
}

/** Request types and the device statuses their target must be in at creation. */
export const TARGET_STATUSES: Readonly<Record<ContentRequestType, readonly string[]>> = {
  issuance: ['AVAILABLE'],
  produce: ['AVAILABLE'],
  recycle: ['AVAILABLE', 'TERMINATED'],
  'unlock pin': ['ISSUED'],
  update: ['ISSUED'],
};

/** How long a request stays open unless the body asks for less (CREDENTIAL-MANAGEMENT.md). */
export const DEFAULT_LIFETIME_MS: Readonly<Record<ContentRequestType, number>> = {
  issuance: 7 * 24 * 3600_000,
  produce: 7 * 24 * 3600_000,
  recycle: 7 * 24 * 3600_000,
  'unlock pin': 10 * 60_000,
  update: 7 * 24 * 3600_000,
};

/** The lifecycle as CONTENT-REQUESTS.md shows it: the moves, then status x trigger. */
export function renderContentRequestLifecycle(): string {
  const lines = ['| Trigger | Asked for by | From | To | Device | Audit | Also |', '|---|---|---|---|---|---|---|'];
  for (const t of CONTENT_REQUEST_LIFECYCLE) {
    const trigger = (CONTENT_REQUEST_ACTIONS as readonly string[]).includes(t.trigger) ? `**${t.trigger}**` : t.trigger;
    lines.push(
      `| ${trigger} | ${t.via} | ${t.from.map((s) => `\`${s}\``).join(', ')} | \`${t.to}\` | ${t.releasesDevice ? 'back to stock (issuance, produce)' : '-'} | \`${t.audit}\` | ${t.effect || '-'} |`,
    );
  }
  lines.push('', 'Status x trigger (the cell is the next status; `409` marks a move refused in that status):', '');
  const triggers = CONTENT_REQUEST_LIFECYCLE.map((t) => t.trigger);
  lines.push(`| Status | ${triggers.join(' | ')} |`, `|---|${triggers.map(() => '---').join('|')}|`);
  for (const status of CONTENT_REQUEST_STATUSES) {
    const cells = CONTENT_REQUEST_LIFECYCLE.map((t) => (t.from.includes(status) ? t.to : '409'));
    lines.push(`| \`${status}\` | ${cells.join(' | ')} |`);
  }
  return lines.join('\n');
}
