/**
 * When a failed send is tried again (DECISIONS 10.3): exponential backoff with equal jitter (half
 * the delay fixed, half random, so senders that failed together do not retry together), from
 * `baseMs` doubling per attempt up to `maxMs`; a hub's Retry-After wins when it says.
 */
export function retryDelayMs(attempt: number, baseMs: number, maxMs: number, random: () => number = Math.random): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** Math.min(attempt - 1, 30));
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}

/** The longest Retry-After honoured: beyond it a hub's answer is taken as a day. */
const MAX_RETRY_AFTER_MS = 86_400_000;

/** Retry-After (RFC 9110 10.2.3) in milliseconds from `nowMs`: delay-seconds or an HTTP-date; undefined when absent or unreadable. */
export function retryAfterMs(header: string | null | undefined, nowMs: number): number | undefined {
  if (!header) return undefined;
  const text = header.trim();
  if (/^\d{1,10}$/.test(text)) return Math.min(Number(text) * 1000, MAX_RETRY_AFTER_MS);
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.min(Math.max(0, at - nowMs), MAX_RETRY_AFTER_MS);
}

/** What an answer from the hub means for the notification. */
export type SendVerdict = 'sent' | 'retry' | 'gone' | 'rejected';

export function verdictOf(status: number): SendVerdict {
  if (status >= 200 && status < 300) return 'sent';
  if (status === 429 || status >= 500) return 'retry';
  // The hub says the handle is gone. Not 404: a hub answers 404 for a hub path that does not exist,
  // and a mistyped hub must not mark every authenticator of the organization stale.
  if (status === 410) return 'gone';
  return 'rejected';
}
