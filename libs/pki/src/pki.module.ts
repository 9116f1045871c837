import { Module } from '@nestjs/common';
import { AccountsModule } from '@app/accounts';
import { CaBootstrap } from './ca-bootstrap';
import { CertificateAuthorityRepository } from './certificate-authority.repository';
import { CertificateAuthority } from './certificate-authority.service';
import { CertificateRevocationListeners } from './certificate-revocation-listeners';
import { CaAdminController } from './http/ca-admin.controller';
import { CaPresenter } from './http/ca.presenter';
import { PkiPublicController } from './http/pki-public.controller';
import { OcspResponder } from './ocsp-responder';

/** The organizations' issuing CAs, their certificates, CRLs and public endpoints (libs/pki/README.md). */
@Module({
  // After accounts: the bootstrap organization exists before CaBootstrap gives it a CA.
  imports: [AccountsModule],
  controllers: [CaAdminController, PkiPublicController],
  providers: [CertificateAuthorityRepository, CertificateAuthority, CertificateRevocationListeners, CaPresenter, OcspResponder, CaBootstrap],
  exports: [CertificateAuthority, CertificateRevocationListeners, CaPresenter],
})
export class PkiModule {}
