import { CircuitBreaker } from './circuit-breaker';
import { retryAfterMs, retryDelayMs, verdictOf } from './retry-policy';

describe('circuit breaker', () => {
  it('opens after N consecutive failures, lets one probe through after the cool-down, closes on its success', () => {
    const breaker = new CircuitBreaker(3, 1000);
    breaker.failed(0);
    breaker.failed(0);
    breaker.succeeded();
    breaker.failed(0);
    breaker.failed(0);
    expect(breaker.allows(0)).toBe(true);
    breaker.failed(10);
    expect(breaker.state).toBe('open');
    expect(breaker.allows(500)).toBe(false);
    expect(breaker.reopensAt(500)).toBe(1010);
    expect(breaker.allows(1010)).toBe(true);
    expect(breaker.state).toBe('halfOpen');
    expect(breaker.allows(1010)).toBe(false);
    breaker.succeeded();
    expect(breaker.state).toBe('closed');
    expect(breaker.allows(1011)).toBe(true);
  });

  it('a failed probe opens it for another cool-down', () => {
    const breaker = new CircuitBreaker(1, 1000);
    breaker.failed(0);
    expect(breaker.allows(1000)).toBe(true);
    breaker.failed(1000);
    expect(breaker.allows(1999)).toBe(false);
    expect(breaker.allows(2000)).toBe(true);
  });
});

describe('retry policy', () => {
  it('doubles per attempt with equal jitter, up to the maximum', () => {
    expect(retryDelayMs(1, 1000, 60000, () => 0)).toBe(500);
    expect(retryDelayMs(1, 1000, 60000, () => 1)).toBe(1000);
    expect(retryDelayMs(3, 1000, 60000, () => 0.5)).toBe(3000);
    expect(retryDelayMs(20, 1000, 60000, () => 1)).toBe(60000);
  });

  it('reads Retry-After as seconds or an HTTP date', () => {
    expect(retryAfterMs('7', 0)).toBe(7000);
    expect(retryAfterMs('Thu, 01 Jan 1970 00:00:30 GMT', 10_000)).toBe(20_000);
    expect(retryAfterMs('soon', 0)).toBeUndefined();
    expect(retryAfterMs(null, 0)).toBeUndefined();
  });

  it('retries 429 and 5xx, marks 410 gone, refuses other 4xx', () => {
    expect([201, 429, 500, 503, 410, 404, 400, 401].map(verdictOf)).toEqual(['sent', 'retry', 'retry', 'retry', 'gone', 'rejected', 'rejected', 'rejected']);
  });
});
