import { X509Certificate } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import type { SmartCardHolder, SmartCardLogonSource } from '@app/auth';
import { Database } from '@app/persistence';
import { CertificateAuthority, OID } from '@app/pki';

/**
 * The hosted login page's smart-card check (libs/auth SmartCardLogons; DECISIONS 14.1): the
 * certificate must be signed by one of the organization's CA generations, name smart-card logon
 * among its extended key usages, be inside its validity, be `good` in the CA's record (not revoked,
 * not on hold: what its CRL and OCSP answers say), and be the ISSUED certificate credential of
 * exactly one wallet, whose owner is the person.
 */
@Injectable()
export class SmartCardLogonCredentials implements SmartCardLogonSource {
  constructor(
    private readonly db: Database,
    private readonly ca: CertificateAuthority,
  ) {}

  async holderOf(orgId: string, der: Buffer, at: Date): Promise<SmartCardHolder> {
    let certificate: X509Certificate;
    try {
      certificate = new X509Certificate(der);
    } catch {
      return { refusal: 'unparsable certificate' };
    }
    if (new Date(certificate.validFrom) > at || new Date(certificate.validTo) <= at) return { refusal: 'outside its validity' };
    if (!(await this.issuedByOrganizationCa(orgId, certificate))) return { refusal: "not issued by the organization's CA" };
    // Every leaf of today's profile carries smart-card logon (libs/pki profile.ts); checked all the same, so that a
    // certificate the CA signed for another use never signs a person in. Node's `keyUsage` lists the extended key usages, and is
    // undefined (though typed string[]) when the certificate has none.
    const extendedKeyUsages: readonly string[] | undefined = certificate.keyUsage;
    if (!extendedKeyUsages?.includes(OID.smartcardLogon)) return { refusal: 'not a smart-card logon certificate (extended key usage)' };
    const serial = certificate.serialNumber.toLowerCase().replace(/^(00)+/, '');
    const record = await this.ca.status(orgId, serial);
    if (!record || record.status !== 'good' || !record.der.equals(certificate.raw)) return { refusal: `certificate ${record?.status ?? 'unknown to the CA'}` };
    const holders = await this.db.query<{ owner_user_id: string }>(
      `SELECT w.owner_user_id FROM credentials c JOIN wallets w ON w.id = c.wallet_id
        WHERE c.org_id = $1 AND c.type = 'PKI_CERTIFICATE' AND c.certificate_serial = $2 AND c.status = 'ISSUED'`,
      [orgId, serial],
    );
    if (holders.length !== 1) return { refusal: holders.length === 0 ? 'in no wallet as an issued credential' : 'in more than one wallet' };
    return { userId: holders[0].owner_user_id, serial };
  }

  /** Signed by the current CA certificate or a retired generation's (a renewal keeps earlier certificates working until they expire). */
  private async issuedByOrganizationCa(orgId: string, certificate: X509Certificate): Promise<boolean> {
    let cas: Buffer[];
    try {
      cas = [await this.ca.caCertificate(orgId), ...(await this.ca.generations(orgId)).map((g) => g.certificate).filter((c): c is Buffer => c !== null)];
    } catch {
      return false;
    }
    return cas.some((der) => {
      const ca = new X509Certificate(der);
      return certificate.checkIssued(ca) && certificate.verify(ca.publicKey);
    });
  }
}
