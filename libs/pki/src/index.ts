export * from './certificate-authority.service';
export * from './certificate-authority.repository';
export * from './profile';
export * from './pki.module';
