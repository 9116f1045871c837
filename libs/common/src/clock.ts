/**
 * The clock is a port so that token lifetime rules (expiry, unused timeout, certificate validity)
 * are tested with a controllable clock instead of sleeps. Rules compare against `now()` from here,
 * never against the database's `now()`.
 */
export abstract class Clock {
  abstract now(): Date;

  nowSeconds(): number {
    return Math.floor(this.now().getTime() / 1000);
  }
}

export class SystemClock extends Clock {
  now(): Date {
    return new Date();
  }
}
