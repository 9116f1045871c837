import { Injectable } from '@nestjs/common';

/** Whose smart-card logon certificate this is, or why it cannot sign anyone in (for the audit log only). */
export type SmartCardHolder = { userId: string; serial: string } | { refusal: string };

/** What the hosted login page asks of a presented client certificate (DECISIONS 14.1). */
export interface SmartCardLogonSource {
  /**
   * The person whose wallet holds `certificate` (DER) as an ISSUED certificate credential, when the
   * certificate chains to one of the organization's CA generations, is within its validity at `at`,
   * and the CA's record says it is neither revoked nor on hold.
   */
  holderOf(orgId: string, certificate: Buffer, at: Date): Promise<SmartCardHolder>;
}

/**
 * The smart-card logon check, supplied by credential management (which issues the certificates
 * into wallets and asks the organization's CA), registered when its module starts. Without a
 * source (the command line) no certificate signs anyone in.
 */
@Injectable()
export class SmartCardLogons implements SmartCardLogonSource {
  private source?: SmartCardLogonSource;

  register(source: SmartCardLogonSource): void {
    if (this.source) throw new Error('SmartCardLogons: a source is already registered.');
    this.source = source;
  }

  holderOf(orgId: string, certificate: Buffer, at: Date): Promise<SmartCardHolder> {
    return this.source ? this.source.holderOf(orgId, certificate, at) : Promise.resolve({ refusal: 'no smart-card source' });
  }
}
