import { Injectable } from '@nestjs/common';

/** What the hosted login page asks of a person's one-time code credential (DECISIONS 14.1). */
export interface OneTimeCodeSource {
  /** Whether the user holds an ISSUED OATH TOTP credential. */
  holds(orgId: string, userId: string): Promise<boolean>;
  /**
   * True only for the first acceptance of a right code (RFC 6238, one time step of drift either way)
   * of one of the user's ISSUED OATH TOTP credentials, on any instance: the owner records the
   * accepted time step in the database atomically, and a code of that step or an earlier one fails.
   */
  accept(orgId: string, userId: string, code: string, at: Date): Promise<boolean>;
}

/**
 * The person's OATH TOTP credential, the one SyncSession issues: credential management holds it
 * (libs/auth must not read its tables) and registers its side when its module starts, as it does for
 * libs/device's DeviceContents. Without a source (the command line) nobody holds a code.
 */
@Injectable()
export class OneTimeCodes implements OneTimeCodeSource {
  private source?: OneTimeCodeSource;

  register(source: OneTimeCodeSource): void {
    if (this.source) throw new Error('OneTimeCodes: a source is already registered; one library keeps the one-time code credentials.');
    this.source = source;
  }

  holds(orgId: string, userId: string): Promise<boolean> {
    return this.source ? this.source.holds(orgId, userId) : Promise.resolve(false);
  }

  accept(orgId: string, userId: string, code: string, at: Date): Promise<boolean> {
    return this.source ? this.source.accept(orgId, userId, code, at) : Promise.resolve(false);
  }
}
