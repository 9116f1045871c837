import { withGeneratedSection } from '@app/common';
import { DEVICE_ACTIONS, DEVICE_LIFECYCLE, DEVICE_STATUSES, DeviceAction, DeviceTransition, nextStatus } from './device-lifecycle';

const isAction = (trigger: string): trigger is DeviceAction => (DEVICE_ACTIONS as readonly string[]).includes(trigger);

function reasonText(t: DeviceTransition): string {
  const { reason } = t;
  if (t.to === null) return '-';
  if (reason.allowed.length === 0) return `\`${reason.default}\``;
  const allowed = reason.allowed.map((r) => `\`${r}\``).join(', ');
  return reason.required ? `required: ${allowed}` : `optional: ${allowed} (default \`${reason.default}\`)`;
}

/** The lifecycle as the two markdown tables of LIFECYCLE.md: the moves, and status x trigger. */
export function renderLifecycleMarkdown(): string {
  const lines: string[] = [];
  lines.push('| Trigger | Asked for by | From | To | status.reason | Also |');
  lines.push('|---|---|---|---|---|---|');
  for (const t of DEVICE_LIFECYCLE) {
    const trigger = isAction(t.trigger) ? `**${t.trigger}**` : t.trigger;
    const to = t.to === null ? '(removed)' : `\`${t.to}\``;
    const also = t.clearsOwner ? `${t.effect}; owner cleared` : t.effect;
    lines.push(`| ${trigger} | ${t.via} | ${t.from.map((s) => `\`${s}\``).join(', ')} | ${to} | ${reasonText(t)} | ${also} |`);
  }
  lines.push('');
  lines.push('Status x trigger (the cell is the next status; `409` marks an entry point refused in that status, `-` an event that cannot happen):');
  lines.push('');
  const triggers = DEVICE_LIFECYCLE.map((t) => t.trigger);
  lines.push(`| Status | ${triggers.map((t) => (isAction(t) ? `**${t}**` : t)).join(' | ')} |`);
  lines.push(`|---|${triggers.map(() => '---').join('|')}|`);
  for (const status of DEVICE_STATUSES) {
    const cells = triggers.map((trigger) => {
      const next = nextStatus(status, trigger);
      if (next === undefined) return isAction(trigger) ? '409' : '-';
      return next === null ? '(removed)' : next;
    });
    lines.push(`| \`${status}\` | ${cells.join(' | ')} |`);
  }
  return lines.join('\n');
}

/** Replaces the generated part of `document` with the current rendering. */
export function withGeneratedLifecycle(document: string): string {
  return withGeneratedSection(document, 'libs/device/src/lifecycle/device-lifecycle.ts', renderLifecycleMarkdown());
}
