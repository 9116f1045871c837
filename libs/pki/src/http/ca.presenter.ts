import { Injectable } from '@nestjs/common';
import { isoTimestamp } from '@app/common';
import type { CaGenerationRow, CaRow } from '../certificate-authority.repository';
import type { GenerationRevocation } from '../certificate-authority.service';

/** DER as PEM, base64 in lines of 64 characters. */
export const pem = (label: string, der: Buffer) =>
  `-----BEGIN ${label}-----\n${der
    .toString('base64')
    .replace(/(.{64})/g, '$1\n')
    .replace(/\n$/, '')}\n-----END ${label}-----\n`;

/** The CA as the admin API shows it. */
@Injectable()
export class CaPresenter {
  /** What a generation's revocation did. */
  revocation(r: GenerationRevocation) {
    return {
      generation: r.generation,
      reason: r.reason,
      compromisedAt: isoTimestamp(r.compromisedAt),
      revokedCertificates: r.revokedCertificates,
      crlsPublished: r.crlsPublished,
    };
  }

  /** One generation as GET .../ca/generations lists it: which key, which name, how far it is, until when. */
  generation(row: CaRow | CaGenerationRow, crl?: { crl_number: string; this_update: Date; next_update: Date }) {
    return {
      generation: row.generation,
      status: row.status,
      mode: row.mode,
      keyAlgorithm: row.key_algorithm,
      subject: row.subject,
      notAfter: row.not_after ? isoTimestamp(row.not_after) : null,
      // Revoked as compromised (DECISIONS 9.1): shown so the desk can tell it from a plain retirement.
      ...(row.compromised_at ? { compromisedAt: isoTimestamp(row.compromised_at) } : {}),
      // The CRL its key signed last (the one relying parties fetch), null before anyone fetched one.
      lastCrl: crl ? { crlNumber: crl.crl_number, thisUpdate: isoTimestamp(crl.this_update), nextUpdate: isoTimestamp(crl.next_update) } : null,
    };
  }

  /** The current generation, with a renewal awaiting its certificate and the retired generations when there are. */
  ca(row: CaRow, generations: CaGenerationRow[] = []) {
    const renewal = generations.find((g) => g.status === 'awaiting-certificate');
    const retired = generations.filter((g) => g.status === 'retired').reverse();
    return {
      id: row.org_id,
      status: row.status,
      mode: row.mode,
      generation: row.generation,
      keyAlgorithm: row.key_algorithm,
      keyLabel: row.key_label,
      subject: row.subject,
      ...(row.certificate ? { certificate: pem('CERTIFICATE', row.certificate), notAfter: isoTimestamp(row.not_after!) } : {}),
      // Revoked as compromised: it issues nothing until a renewal.
      ...(row.compromised_at ? { compromisedAt: isoTimestamp(row.compromised_at) } : {}),
      ...(row.status === 'awaiting-certificate' && row.csr ? { csr: pem('CERTIFICATE REQUEST', row.csr) } : {}),
      ...(renewal
        ? {
            renewal: {
              generation: renewal.generation,
              status: renewal.status,
              keyAlgorithm: renewal.key_algorithm,
              keyLabel: renewal.key_label,
              subject: renewal.subject,
              csr: pem('CERTIFICATE REQUEST', renewal.csr!),
            },
          }
        : {}),
      ...(retired.length > 0
        ? {
            previousGenerations: retired.map((g) => ({
              generation: g.generation,
              keyAlgorithm: g.key_algorithm,
              keyLabel: g.key_label,
              subject: g.subject,
              certificate: pem('CERTIFICATE', g.certificate!),
              notAfter: isoTimestamp(g.not_after!),
              lastCertificateExpires: g.last_certificate_expires ? isoTimestamp(g.last_certificate_expires) : null,
              ...(g.compromised_at ? { compromisedAt: isoTimestamp(g.compromised_at) } : {}),
              // None when it retired compromised; shown otherwise, also once a neighbour is compromised (then on that CRL).
              ...(g.old_with_new && g.new_with_old
                ? { crossCertificates: { oldWithNew: pem('CERTIFICATE', g.old_with_new), newWithOld: pem('CERTIFICATE', g.new_with_old) } }
                : {}),
            })),
          }
        : {}),
      meta: {
        resourceType: 'CertificateAuthority',
        created: isoTimestamp(row.created_at),
        lastModified: isoTimestamp(row.updated_at),
        version: String(row.version),
      },
    };
  }
}
