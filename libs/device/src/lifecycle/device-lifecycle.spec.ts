import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEVICE_ACTIONS, DEVICE_LIFECYCLE, DEVICE_REASONS, DEVICE_STATUSES, nextStatus, resolveReason, transitionOf } from './device-lifecycle';
import { withGeneratedLifecycle } from './lifecycle-markdown';

const DOC = join(__dirname, '..', '..', 'LIFECYCLE.md');

describe('device lifecycle table (DECISIONS 8)', () => {
  it('LIFECYCLE.md holds the table rendered from the code (UPDATE_LIFECYCLE_DOC=1 rewrites it)', () => {
    const current = readFileSync(DOC, 'utf8');
    const rendered = withGeneratedLifecycle(current);
    if (process.env.UPDATE_LIFECYCLE_DOC === '1' && rendered !== current) writeFileSync(DOC, rendered);
    expect(current).toBe(rendered);
  });

  it('says what DECISIONS 8 says, move by move', () => {
    const moves = Object.fromEntries(DEVICE_LIFECYCLE.map((t) => [t.trigger, { from: [...t.from].sort(), to: t.to }]));
    expect(moves).toEqual({
      bind: { from: ['AVAILABLE'], to: 'ASSIGNED' },
      unbind: { from: ['ASSIGNED'], to: 'AVAILABLE' },
      completeIssuance: { from: ['ASSIGNED'], to: 'ISSUED' },
      completeProduce: { from: ['ASSIGNED'], to: 'PRODUCED' },
      activate: { from: ['PRODUCED'], to: 'ISSUED' },
      suspend: { from: ['ISSUED'], to: 'ON_HOLD' },
      resume: { from: ['ON_HOLD'], to: 'ISSUED' },
      revoke: { from: ['ISSUED', 'ON_HOLD'], to: 'REVOKED' },
      terminate: { from: ['ISSUED', 'ON_HOLD', 'PRODUCED', 'REVOKED'], to: 'TERMINATED' },
      recycle: { from: ['AVAILABLE', 'TERMINATED'], to: 'AVAILABLE' },
      delete: { from: ['AVAILABLE'], to: null },
    });
    expect(transitionOf('recycle').reason.default).toBe('RECYCLE');
    expect(transitionOf('terminate').clearsOwner).toBe(true);
  });

  it('every entry point has exactly one row, and every status and reason named is a declared one', () => {
    for (const action of DEVICE_ACTIONS) expect(DEVICE_LIFECYCLE.filter((t) => t.trigger === action)).toHaveLength(1);
    for (const t of DEVICE_LIFECYCLE) {
      for (const status of [...t.from, ...(t.to ? [t.to] : [])]) expect(DEVICE_STATUSES).toContain(status);
      for (const reason of [...t.reason.allowed, t.reason.default]) expect(DEVICE_REASONS).toContain(reason);
    }
  });

  it('nextStatus answers the table, and undefined for every other move', () => {
    expect(nextStatus('ISSUED', 'suspend')).toBe('ON_HOLD');
    expect(nextStatus('AVAILABLE', 'delete')).toBeNull();
    expect(nextStatus('ON_HOLD', 'suspend')).toBeUndefined();
    expect(nextStatus('REVOKED', 'resume')).toBeUndefined();
  });

  it.each([
    ['suspend', undefined, { ok: false, problem: 'suspend needs a reason: one of LOST, STOLEN, DAMAGED, FORGOTTEN' }],
    ['suspend', 'LOST', { ok: true, reason: 'LOST' }],
    ['suspend', 'RENEW', { ok: false, problem: 'reason RENEW does not apply to suspend; use one of LOST, STOLEN, DAMAGED, FORGOTTEN' }],
    ['resume', undefined, { ok: true, reason: 'NONE' }],
    ['revoke', 'STOLEN', { ok: true, reason: 'STOLEN' }],
    ['terminate', undefined, { ok: true, reason: 'UNASSIGNED' }],
    ['delete', 'LOST', { ok: false, problem: 'delete takes no reason' }],
  ] as const)('resolveReason(%s, %s)', (trigger, given, expected) => {
    expect(resolveReason(trigger, given)).toEqual(expected);
  });
});
