export * from './certificate-authority.service';
export * from './certificate-authority.repository';
export * from './certificate-revocation-listeners';
export { CaPresenter } from './http/ca.presenter';
export * from './profile';
export * from './pki.module';
