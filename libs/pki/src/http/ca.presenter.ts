import { Injectable } from '@nestjs/common';
import { isoTimestamp } from '@app/common';
import type { CaRow } from '../certificate-authority.repository';

const pem = (label: string, der: Buffer) =>
  `-----BEGIN ${label}-----\n${der
    .toString('base64')
    .replace(/(.{64})/g, '$1\n')
    .replace(/\n$/, '')}\n-----END ${label}-----\n`;

/** The CA as the admin API shows it. */
@Injectable()
export class CaPresenter {
  ca(row: CaRow) {
    return {
      id: row.org_id,
      status: row.status,
      mode: row.mode,
      keyAlgorithm: row.key_algorithm,
      keyLabel: row.key_label,
      subject: row.subject,
      ...(row.certificate ? { certificate: pem('CERTIFICATE', row.certificate), notAfter: isoTimestamp(row.not_after!) } : {}),
      ...(row.status === 'awaiting-certificate' && row.csr ? { csr: pem('CERTIFICATE REQUEST', row.csr) } : {}),
      meta: {
        resourceType: 'CertificateAuthority',
        created: isoTimestamp(row.created_at),
        lastModified: isoTimestamp(row.updated_at),
        version: String(row.version),
      },
    };
  }
}
