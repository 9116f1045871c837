import { Injectable } from '@nestjs/common';
import type { Actor } from '@app/common';
import type { Transaction } from '@app/persistence';

/** A TOTP secret offered to a person at enrolment, before they confirm it with a code. */
export interface OfferedTotp {
  /** RFC 4648 base32, as authenticator apps read it. */
  secret: string;
  digits: number;
  period: number;
  /** The Key Uri Format (otpauth://totp/...) the page's QR code holds. */
  uri: string;
}

/** What the enrolment page (DECISIONS 14.4) asks of the library that keeps people's OATH TOTP credentials. */
export interface TotpEnrolmentSource {
  /** A new secret with the organization's credential policy (digits, period), labelled for `userName`. */
  offer(orgId: string, userName: string): Promise<OfferedTotp>;
  /** The RFC 6238 time step whose code `code` is (one step of drift either way), or undefined. */
  check(totp: Pick<OfferedTotp, 'secret' | 'digits' | 'period'>, code: string, at: Date): number | undefined;
  /**
   * Stores the person's OATH_TOTP credential in the caller's transaction: ISSUED, in their wallet, on
   * a software-authenticator device, audited, with `step` as its last accepted step (the code that
   * confirmed it never signs anyone in). Answers the credential's id.
   */
  enrol(
    orgId: string,
    userId: string,
    totp: Pick<OfferedTotp, 'secret' | 'digits' | 'period'> & { step: number },
    actor: Actor,
    tx: Transaction,
  ): Promise<string>;
}

/**
 * The person's own TOTP enrolment: credential management keeps OATH credentials (libs/auth never
 * reads its tables) and registers its side when its module starts, as it does for OneTimeCodes.
 */
@Injectable()
export class TotpEnrolment implements TotpEnrolmentSource {
  private source?: TotpEnrolmentSource;

  register(source: TotpEnrolmentSource): void {
    if (this.source) throw new Error('TotpEnrolment: a source is already registered; one library keeps the OATH TOTP credentials.');
    this.source = source;
  }

  offer(orgId: string, userName: string): Promise<OfferedTotp> {
    return this.required().offer(orgId, userName);
  }

  check(totp: Pick<OfferedTotp, 'secret' | 'digits' | 'period'>, code: string, at: Date): number | undefined {
    return this.required().check(totp, code, at);
  }

  enrol(
    orgId: string,
    userId: string,
    totp: Pick<OfferedTotp, 'secret' | 'digits' | 'period'> & { step: number },
    actor: Actor,
    tx: Transaction,
  ): Promise<string> {
    return this.required().enrol(orgId, userId, totp, actor, tx);
  }

  private required(): TotpEnrolmentSource {
    if (!this.source) throw new Error('TotpEnrolment: no source registered (credential management is not loaded).');
    return this.source;
  }
}
