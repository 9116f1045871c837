export {
  CertificateAuthority,
  type CreateCaInput,
  CRL_VALIDITY_MS,
  DEFAULT_CERTIFICATE_LIFETIME_DAYS,
  generationOf,
  type GenerationRevocation,
  type IssuedCertificate,
  type IssueOptions,
  type RenewCaInput,
  type RevocationReason,
} from './certificate-authority.service';
export {
  type CaGenerationRow,
  type CaRow,
  CertificateAuthorityRepository,
  type CertificateStatus,
  type IssuedRow,
  type IssuedStatus,
  type ListedRow,
  type OcspLookup,
  type PublishedCrl,
  type SigningGeneration,
} from './certificate-authority.repository';
export { type CertificateRevocation, type CertificateRevocationListener, CertificateRevocationListeners } from './certificate-revocation-listeners';
export { CaPresenter } from './http/ca.presenter';
export {
  type CaLeafProfile,
  caLeafProfile,
  type CertificateSubject,
  leafTbsCertificate,
  OID,
  randomSerial,
  SIGNATURE_ALGORITHMS,
  signingAlgorithmOf,
} from './profile';
export { PkiModule } from './pki.module';
