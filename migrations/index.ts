import { CreateTokenServiceSchema1763700000000 } from './1763700000000-CreateTokenServiceSchema';
import { CreateUsers1763800000000 } from './1763800000000-CreateUsers';
import { CreateCertifiedApplications1763800000001 } from './1763800000001-CreateCertifiedApplications';
import { CreateDeliveryGateways1763900000100 } from './1763900000100-CreateDeliveryGateways';
import { CreateDevices1763900000200 } from './1763900000200-CreateDevices';
import { AddAuditEventCodes1764100000000 } from './1764100000000-AddAuditEventCodes';
import { CreatePki1764200000000 } from './1764200000000-CreatePki';
import { CreateCredentialManagement1764300000000 } from './1764300000000-CreateCredentialManagement';
import { CreateReferenceData1764300000100 } from './1764300000100-CreateReferenceData';
import { AddEnrollmentDataAndWalletSuspensions1764300000200 } from './1764300000200-AddEnrollmentDataAndWalletSuspensions';
import { AddUserEmailIndex1764300000300 } from './1764300000300-AddUserEmailIndex';
import { CreateContentRequests1764400000000 } from './1764400000000-CreateContentRequests';
import { CreateCredentialsAndSyncSessions1764400000100 } from './1764400000100-CreateCredentialsAndSyncSessions';
import { CreateDeviceFlows1764400000200 } from './1764400000200-CreateDeviceFlows';
import { CreateSigningKeys1764500000000 } from './1764500000000-CreateSigningKeys';
import { CreateAuthenticators1764500000200 } from './1764500000200-CreateAuthenticators';
import { AddCaGenerations1764500000300 } from './1764500000300-AddCaGenerations';
import { CreateSignInSessions1764600000000 } from './1764600000000-CreateSignInSessions';
import { CreateOidcClients1764610000000 } from './1764610000000-CreateOidcClients';
import { CreateAuthorizationGrants1764610000100 } from './1764610000100-CreateAuthorizationGrants';
import { AddUserAdministrators1764620000000 } from './1764620000000-AddUserAdministrators';
import { CreatePushOutbox1764630000000 } from './1764630000000-CreatePushOutbox';
import { AddPushOutboxRetention1764630000100 } from './1764630000100-AddPushOutboxRetention';
import { DropPushOutboxGatewayReference1764630000200 } from './1764630000200-DropPushOutboxGatewayReference';
import { AddPushOutboxLease1764630000300 } from './1764630000300-AddPushOutboxLease';
import { CreateBackchannelAuthentication1764640000000 } from './1764640000000-CreateBackchannelAuthentication';
import { AddUserNamePrefixIndex1764650000000 } from './1764650000000-AddUserNamePrefixIndex';
import { LeaveRoomForCodeConsumption1764660000000 } from './1764660000000-LeaveRoomForCodeConsumption';
import { EndPasswordOnlySessionsByPolicy1764670000000 } from './1764670000000-EndPasswordOnlySessionsByPolicy';
import { RecordSigningKeyTokenExpiry1764682000000 } from './1764682000000-RecordSigningKeyTokenExpiry';
import { AddCaGenerationCompromise1764683000000 } from './1764683000000-AddCaGenerationCompromise';
import { CreateEnrolmentLinks1764686000000 } from './1764686000000-CreateEnrolmentLinks';
import { ChainAuditEvents1764688000000 } from './1764688000000-ChainAuditEvents';
import { CreatePasskeys1764690000000 } from './1764690000000-CreatePasskeys';
import { AddOwnFactorManagement1764691000000 } from './1764691000000-AddOwnFactorManagement';
import { CreateAuditStream1764692000000 } from './1764692000000-CreateAuditStream';
import { AddAuditRetention1764693000000 } from './1764693000000-AddAuditRetention';
import { IndexSignInSessionsByUserAuthTime1764696000000 } from './1764696000000-IndexSignInSessionsByUserAuthTime';
import { IndexAuditEventSearch1764697000000 } from './1764697000000-IndexAuditEventSearch';
import { DropAuditEventSearchIndex1764699000000 } from './1764699000000-DropAuditEventSearchIndex';
import { CheckAuditUpdatesPerStatement1764699000100 } from './1764699000100-CheckAuditUpdatesPerStatement';

/** Every migration, in order. The data source takes classes, not a glob, so source and dist/ behave alike. */
export const MIGRATIONS = [
  CreateTokenServiceSchema1763700000000,
  CreateUsers1763800000000,
  CreateCertifiedApplications1763800000001,
  CreateDeliveryGateways1763900000100,
  CreateDevices1763900000200,
  AddAuditEventCodes1764100000000,
  CreatePki1764200000000,
  CreateCredentialManagement1764300000000,
  CreateReferenceData1764300000100,
  AddEnrollmentDataAndWalletSuspensions1764300000200,
  AddUserEmailIndex1764300000300,
  CreateContentRequests1764400000000,
  CreateCredentialsAndSyncSessions1764400000100,
  CreateDeviceFlows1764400000200,
  CreateSigningKeys1764500000000,
  CreateAuthenticators1764500000200,
  AddCaGenerations1764500000300,
  CreateSignInSessions1764600000000,
  CreateOidcClients1764610000000,
  CreateAuthorizationGrants1764610000100,
  AddUserAdministrators1764620000000,
  CreatePushOutbox1764630000000,
  AddPushOutboxRetention1764630000100,
  DropPushOutboxGatewayReference1764630000200,
  AddPushOutboxLease1764630000300,
  CreateBackchannelAuthentication1764640000000,
  AddUserNamePrefixIndex1764650000000,
  LeaveRoomForCodeConsumption1764660000000,
  EndPasswordOnlySessionsByPolicy1764670000000,
  RecordSigningKeyTokenExpiry1764682000000,
  AddCaGenerationCompromise1764683000000,
  CreateEnrolmentLinks1764686000000,
  ChainAuditEvents1764688000000,
  CreatePasskeys1764690000000,
  AddOwnFactorManagement1764691000000,
  CreateAuditStream1764692000000,
  AddAuditRetention1764693000000,
  IndexSignInSessionsByUserAuthTime1764696000000,
  IndexAuditEventSearch1764697000000,
  DropAuditEventSearchIndex1764699000000,
  CheckAuditUpdatesPerStatement1764699000100,
];
