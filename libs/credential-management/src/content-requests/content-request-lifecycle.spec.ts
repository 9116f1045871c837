import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { withGeneratedSection } from '@app/common';
import {
  CONTENT_REQUEST_ACTIONS,
  CONTENT_REQUEST_LIFECYCLE,
  CONTENT_REQUEST_STATUSES,
  OPEN_STATUSES,
  renderContentRequestLifecycle,
  requestTransitionOf,
} from './content-request-lifecycle';

const DOC = join(__dirname, '..', '..', 'CONTENT-REQUESTS.md');
const SOURCE = 'libs/credential-management/src/content-requests/content-request-lifecycle.ts';

describe('content request lifecycle table (CREDENTIAL-MANAGEMENT.md)', () => {
  it('CONTENT-REQUESTS.md holds the table rendered from the code (UPDATE_LIFECYCLE_DOC=1 rewrites it)', () => {
    const current = readFileSync(DOC, 'utf8');
    const rendered = withGeneratedSection(current, SOURCE, renderContentRequestLifecycle());
    if (process.env.UPDATE_LIFECYCLE_DOC === '1' && rendered !== current) writeFileSync(DOC, rendered);
    expect(current).toBe(rendered);
  });

  it('says what the contract says, move by move (plus cancel and expiry of a failed request, decided)', () => {
    const moves = Object.fromEntries(CONTENT_REQUEST_LIFECYCLE.map((t) => [t.trigger, { from: [...t.from].sort(), to: t.to, releases: t.releasesDevice }]));
    expect(moves).toEqual({
      approve: { from: ['requested'], to: 'approved', releases: false },
      deny: { from: ['requested'], to: 'denied', releases: true },
      cancel: { from: ['approved', 'failed', 'requested'], to: 'cancelled', releases: true },
      delete: { from: ['approved', 'failed', 'requested'], to: 'cancelled', releases: true },
      retry: { from: ['failed'], to: 'approved', releases: false },
      patch: { from: ['requested'], to: 'requested', releases: false },
      complete: { from: ['approved'], to: 'completed', releases: false },
      fail: { from: ['approved'], to: 'failed', releases: false },
      expire: { from: ['approved', 'failed', 'requested'], to: 'expired', releases: true },
    });
  });

  it('every action has one row; every status named is declared; terminal statuses have no way out', () => {
    for (const action of CONTENT_REQUEST_ACTIONS) expect(CONTENT_REQUEST_LIFECYCLE.filter((t) => t.trigger === action)).toHaveLength(1);
    for (const t of CONTENT_REQUEST_LIFECYCLE) for (const status of [...t.from, t.to]) expect(CONTENT_REQUEST_STATUSES).toContain(status);
    const leavable = new Set(CONTENT_REQUEST_LIFECYCLE.flatMap((t) => t.from));
    expect(CONTENT_REQUEST_STATUSES.filter((s) => !leavable.has(s))).toEqual(['completed', 'denied', 'cancelled', 'expired']);
    expect([...OPEN_STATUSES].sort()).toEqual([...leavable].sort());
    expect(() => requestTransitionOf('nothing' as never)).toThrow(/No content request transition/);
  });
});
