export * from './accounts.module';
export * from './audit/audit.service';
export * from './organizations/organization-settings';
export * from './organizations/organization.service';
export * from './system-accounts/secret-hasher';
export * from './system-accounts/system-account.repository';
export * from './system-accounts/system-account.service';
export * from './system-accounts/certificate-parser';
