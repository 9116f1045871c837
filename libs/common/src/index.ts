export { DomainError, type ErrorCode, forbidden, invalidValue, notFound, OAuthError, type OAuthErrorCode, uniqueness } from './domain-error';
export {
  DEFAULT_PAGE_SIZE,
  type InterfaceListResponse,
  interfaceListResponse,
  type ListResponse,
  listResponse,
  MAX_PAGE_SIZE,
  type Page,
  parsePage,
  type ResourceMeta,
  SCIM_ERROR_SCHEMA,
  SCIM_LIST_SCHEMA,
  SCIM_MEDIA_TYPE,
  scimError,
  type ScimErrorBody,
} from './scim';
export { Clock, SystemClock } from './clock';
export { ClockModule } from './clock.module';
export { type Actor, type Principal, PRINCIPAL_KEY, type RequestOrigin } from './principal';
export {
  ACCESS_RULE,
  type AccessRule,
  accessRuleOf,
  type AdministratorScope,
  AuthorizedBy,
  CorrelationId,
  CurrentPrincipal,
  Public,
  RequestActor,
  RequireAdministrator,
  RequirePermission,
  routeDeclaration,
  SourceAddress,
} from './decorators';
export { isOrgId, isoTimestamp, isUuid, ORG_ID_PATTERN, randomToken, UUID_PATTERN } from './ids';
export { parseBody, readForce, z } from './validation';
export { ScimMediaTypeGuard, ScimMediaTypes } from './scim-media-type.guard';
// The SCIM search component (DECISIONS 7 and 9; scim-search/README.md) and SCIM PATCH, named here
// from their modules: a folder barrel between would list every name a second time.
export { COMPARE_OPERATORS, type CompareOperator, type FilterNode, type FilterValue } from './scim-search/filter-ast';
export { invalidFilter, MAX_FILTER_DEPTH, MAX_FILTER_LENGTH, parseFilter } from './scim-search/filter-parser';
export {
  filterablePaths,
  isComplex,
  metaAttribute,
  type ResolvedPath,
  resolvePath,
  type ScimAttribute,
  type ScimComplexAttribute,
  type ScimResourceDefinition,
  type ScimScalarAttribute,
  type ScimScalarType,
  sortablePaths,
} from './scim-search/resource-definition';
export { compileFilter, escapeLike, SqlParameters } from './scim-search/filter-sql';
export {
  projectionFromQuery,
  projectResource,
  SCIM_SEARCH_REQUEST_SCHEMA,
  type ScimSearch,
  searchFromBody,
  searchFromQuery,
  type SearchSql,
  searchSql,
} from './scim-search/search-request';
export { applyPatch, matchesFilter, MAX_PATCH_OPERATIONS, PATCH_OP_SCHEMA, type PatchTarget } from './scim-patch/patch-op';
export { type RoutedRequest, type RouteFamily, type RouteFamilyName, routeFamilyOf, routeFamilyOfRequest } from './http/route-family';
export {
  CANONICAL_PREFIX,
  canonicalResourceSpelling,
  CREDENTIAL_MANAGEMENT_RESOURCES,
  credentialManagementPaths,
  type CredentialManagementResource,
} from './http/credential-management-paths';
export {
  IfMatch,
  IfMatchHeader,
  keepVersion,
  preconditionFailed,
  type ReplyHeaders,
  RESOURCE_VERSION,
  resourceAnswer,
  SerializedAnswer,
  serializedOnce,
  versionOf,
  weakETag,
} from './http/etag';
export {
  ApiJsonBody,
  ApiPaging,
  ApiPemBody,
  ApiSchemaResponse,
  ApiScimResponse,
  ApiSearchBody,
  META_RESPONSE_SCHEMA,
  scimListSchema,
  scimResourceSchema,
  type ScimResponseOptions,
} from './http/openapi';
export { PARAMETER_FORMATS, type ParameterFormat, PATH_FORMATS, pathFormatOf, PathFormats, RequestInputGuard } from './http/request-input.guard';
export { commonErrorStatuses, declareErrorResponses } from './http/openapi-errors';
export { readPem } from './http/read-pem';
export { isLoopbackHost } from './http/loopback';
export {
  type AddressClass,
  addressClassOf,
  type OutboundAnswer,
  OutboundFailure,
  type OutboundFailureKind,
  outboundHostProblem,
  OutboundHttp,
  outboundLookup,
  type OutboundPolicy,
  type OutboundPost,
  outboundResult,
  type OutboundTls,
  type OutboundTlsConnect,
  outboundTlsConnect,
} from './http/outbound';
export { AnswersWithSecrets, SECRET_ANSWER } from './http/secret-answer';
export { GENERATED_END, generatedBegin, withGeneratedSection } from './generated-section';
export { DataCipher, type SealedValue, UnknownKeyError, UnreadableValueError } from './crypto/data-cipher';
export { resealAll, type ResealResult, type SealedField } from './crypto/reseal';
export { ConcurrencyLimit, type TurnOptions } from './concurrency-limit';
