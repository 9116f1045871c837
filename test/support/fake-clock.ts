import { Clock } from '@app/common';

/** A clock tests move by hand, instead of sleeping (token lifetime, unused timeout, expiries). */
export class FakeClock extends Clock {
  private current: number;

  constructor(start: Date = new Date()) {
    super();
    this.current = start.getTime();
  }

  now(): Date {
    return new Date(this.current);
  }

  advance(seconds: number): void {
    this.current += seconds * 1000;
  }

  set(date: Date): void {
    this.current = date.getTime();
  }
}
