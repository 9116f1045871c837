/**
 * Every action the audit log records, with its stable numeric code (CREDENTIAL-MANAGEMENT.md,
 * "Events"). Codes are never reused or renumbered: a client filters on them
 * (`GET /admin/v1/organizations/{org}/audit-events?code=`). docs/audit-events.md is generated from
 * this table (`npm run docs:audit`) and a test keeps the two equal.
 *
 * Ranges: 1xxxx devices, 2xxxx credentials, 3xxxx content requests, 4xxxx users, 5xxxx wallets,
 * 6xxxx the certification authority (all as the contract numbers them); the platform's own actions
 * follow in 7xxxx organizations and their accounts (73xxx their credential-management reference
 * data: groups, device policies, printers, the global policies; 75xxx the audit event stream's destinations; 76xxx the audit log itself), 8xxxx tokens and authentication
 * (81xxx token-signing keys, 82xxx people's sign-in at the hosted login page and their sessions, 83xxx the authorization code flow),
 * 9xxxx push gateways, authenticator policies (91xxx), authenticator apps (92xxx), push delivery (93xxx) and out-of-band approval, CIBA (94xxx).
 */
interface CatalogueEntry {
  code: number;
  description: string;
}

export const AUDIT_CATALOGUE = {
  'device.create': { code: 10000, description: 'Device created' },
  'device.issue': { code: 10001, description: 'Device issued to a user' },
  'device.update': { code: 10002, description: 'Device updated' },
  'device.assign': { code: 10003, description: 'Device assigned to a content request' },
  'device.produce': { code: 10004, description: 'Device produced' },
  'device.activate': { code: 10005, description: 'Device activated' },
  'device.recycle': { code: 10006, description: 'Device recycled' },
  'device.delete': { code: 10007, description: 'Device deleted' },
  'device.suspend': { code: 10009, description: 'Device suspended' },
  'device.resume': { code: 10010, description: 'Device resumed' },
  'device.revoke': { code: 10011, description: 'Device revoked' },
  'device.terminate': { code: 10012, description: 'Device terminated' },
  'device.import': { code: 10100, description: 'Devices imported from a file (one event for the import, one device.create per device)' },

  'credential.issue': { code: 20001, description: 'Credential issued' },
  'credential.revoke': { code: 20002, description: 'Credential revoked' },
  'credential.suspend': { code: 20003, description: 'Credential suspended' },
  'credential.resume': { code: 20004, description: 'Credential resumed' },

  'content_request.create': { code: 30001, description: 'Content request created' },
  'content_request.approve': { code: 30002, description: 'Content request approved' },
  'content_request.deny': { code: 30003, description: 'Content request denied' },
  'content_request.cancel': { code: 30004, description: 'Content request cancelled' },
  'content_request.complete': { code: 30005, description: 'Content request completed' },
  'content_request.fail': { code: 30006, description: 'Content request failed' },
  'content_request.retry': { code: 30007, description: 'Content request retried' },
  'content_request.expire': { code: 30008, description: 'Content request expired' },
  'content_request.unlock_pin': { code: 30009, description: 'PIN unlocked' },
  'content_request.update': { code: 30010, description: 'Content request changed (PATCH while requested)' },
  'device_flow.start': { code: 30011, description: 'Device flow started (with its content request)' },
  'device_flow.advance': { code: 30012, description: 'Device flow step taken' },
  'device_flow.cancel': { code: 30013, description: 'Device flow cancelled (with its content request)' },

  'user.create': { code: 40001, description: 'User created' },
  'user.update': { code: 40002, description: 'User updated' },
  'user.delete': { code: 40003, description: 'User deleted' },
  'user.enrollment_data.replace': { code: 40004, description: 'Enrollment data changed' },
  'user.password.set': { code: 40005, description: "User's password set" },
  'user.certificate.enroll': { code: 40006, description: "Certificate enrolled for a user's jwt-bearer sign-in" },
  'user.enrolment_link.create': {
    code: 40007,
    description:
      "A person's one-time enrolment link made, or their add-factor ticket (details: link id, purpose add_factor and session for a ticket, expiry, how many open links it replaced; never the link)",
  },
  'user.factors.reset': {
    code: 40009,
    description: "An administrator reset a person's second factors: their software authenticators revoked, their sessions ended, a new enrolment link made",
  },
  'user.factors.require': {
    code: 40010,
    description: 'An administrator marked a person as needing a second factor: after their next right password they enrol one before any session opens',
  },
  'user.enrolment.complete': {
    code: 40008,
    description:
      "A person enrolled their own second factor: through their enrolment link (password chosen), at sign-in after an administrator's mark, or from their session (details: how, link id, credential id, factor)",
  },
  'user.factor.add': {
    code: 40020,
    description:
      'A signed-in person added a second factor (an authenticator app or a passkey) from their Security page through an add-factor ticket (details: ticket id, session, credential id, type, passkey name)',
  },
  'user.factor.rename': { code: 40021, description: 'A person renamed one of their second factors (details: credential id, type, new name)' },
  'user.factor.remove': {
    code: 40022,
    description: 'A person removed one of their second factors: its software authenticator revoked with it (details: credential id, type, name, device)',
  },

  'wallet.suspend': { code: 50001, description: 'Wallet suspended' },
  'wallet.resume': { code: 50002, description: 'Wallet resumed' },
  'wallet.update': { code: 50003, description: "Wallet's notes changed" },

  'ca.create': { code: 60001, description: 'Certification authority created' },
  'certificate.issue': { code: 60002, description: 'Certificate issued' },
  'crl.publish': { code: 60003, description: 'CRL published' },
  'certificate.revoke': { code: 60004, description: 'Certificate revoked (RFC 5280 reason)' },
  'certificate.hold': { code: 60005, description: 'Certificate put on hold (certificateHold)' },
  'certificate.release': { code: 60006, description: 'Certificate released from hold' },
  'ca.renew': { code: 60007, description: 'CA renewal begun: a new key in the HSM, its certificate or a CSR for the enterprise root' },
  'ca.rollover': { code: 60008, description: 'A new CA generation issues; the previous one signs only its CRL and OCSP answers' },
  'ca.revoke': {
    code: 60009,
    description: 'A CA generation revoked as compromised: every certificate it issued revoked (cACompromise); the current one issues nothing until a renewal',
  },

  'organization.create': { code: 70001, description: 'Organization created' },
  'organization.update': { code: 70002, description: 'Organization renamed' },
  'organization.delete': { code: 70003, description: 'Organization deleted' },
  'organization.settings.update': { code: 70005, description: "Organization's settings changed" },
  'admin.access_denied': { code: 70004, description: 'An administrator was refused access to an organization' },
  'authorization.grant_denied': {
    code: 70006,
    description:
      'A caller was refused a role, group or administrator flag it may not give, or a change of an account above its own or of itself (DECISIONS 5.3)',
  },
  'system_account.create': { code: 71001, description: 'System account created' },
  'system_account.update': { code: 71002, description: 'System account updated' },
  'system_account.delete': { code: 71003, description: 'System account deleted' },
  'client_secret.create': { code: 71004, description: 'Client secret created' },
  'client_secret.revoke': { code: 71005, description: 'Client secret revoked' },
  'client_certificate.upload': { code: 71006, description: 'Client certificate uploaded' },
  'client_certificate.delete': { code: 71007, description: 'Client certificate deleted' },
  'application.certify': { code: 72001, description: 'Application certified' },
  'application.uncertify': { code: 72002, description: 'Application certification withdrawn' },
  'group.create': { code: 73001, description: 'Group created' },
  'group.update': { code: 73002, description: 'Group renamed or its members changed' },
  'group.delete': { code: 73003, description: 'Group deleted' },
  'session.request_refused': {
    code: 74001,
    description:
      "A call with a person's session cookie was refused as a possible cross-site request forgery, and changed nothing (details: method, the failed rule, session id)",
  },
  'audit.pruned': {
    code: 76001,
    description:
      "The retention job removed an organization's (or the platform's) oldest audit events up to a signed checkpoint (a platform event; details: org, events, throughSeq, checkpointSignedAt, retentionDays)",
  },
  'device_policy.create': { code: 73101, description: 'Device policy created' },
  'device_policy.update': { code: 73102, description: 'Device policy changed' },
  'device_policy.delete': { code: 73103, description: 'Device policy deleted' },
  'printer.create': { code: 73201, description: 'Card printer added' },
  'printer.update': { code: 73202, description: 'Card printer changed' },
  'printer.delete': { code: 73203, description: 'Card printer removed' },
  'credential_policy.replace': { code: 73301, description: 'Credential policy replaced' },
  'wallet_policy.replace': { code: 73302, description: 'Wallet policy replaced' },
  'audit_destination.create': { code: 75001, description: 'Audit event stream destination (syslog or webhook) added (never its webhook secret or TLS key)' },
  'audit_destination.update': { code: 75002, description: 'Audit event stream destination changed (enabled, address, name, certificates)' },
  'audit_destination.delete': { code: 75003, description: 'Audit event stream destination removed, with its pending deliveries' },
  'audit_destination.test': {
    code: 75004,
    description: 'Test event sent to an audit event stream destination (outcome failure: not delivered, with its coarse class)',
  },
  'audit_destination.redrive': { code: 75005, description: "A dead-lettered delivery of an audit event put back in the destination's queue" },

  'token.issue': { code: 80001, description: 'Access token issued' },
  'token.revoke': { code: 80002, description: 'Access token revoked' },
  'authentication.fail': { code: 80003, description: 'Authentication failed at the token endpoint' },
  'authentication.lockout': { code: 80004, description: "Identity, address or an organization's password grant locked out after repeated failures" },
  'certificate.expired_use': { code: 80005, description: 'An expired client certificate was presented' },
  'signing_key.generate': { code: 81001, description: 'Token-signing key generated in the HSM (next, published in JWKS)' },
  'signing_key.activate': { code: 81002, description: 'Token-signing key activated: new tokens are signed with it' },
  'signing_key.retire': { code: 81003, description: 'Token-signing key retired (replaced by an activation, or a next key withdrawn)' },
  'signing_key.register': { code: 81004, description: 'JWT_KEY registered as the active token-signing key at first start' },
  'signing_key.schedule': { code: 81005, description: 'Activation of a token-signing key scheduled for a stated time' },
  'signing_key.destroy': { code: 81006, description: "A retired token-signing key's HSM object destroyed" },
  'signing_key.withdraw': {
    code: 81007,
    description: 'Token-signing key withdrawn in an emergency (believed compromised): out of JWKS and its tokens refused at once',
  },
  'sign_in.success': {
    code: 82000,
    description: 'A person signed in through the hosted login page; a new browser session (details: amr, session id; never the cookie)',
  },
  'sign_in.fail': {
    code: 82001,
    description: 'A sign-in at the hosted login page failed (details: reason and step: password, one-time code or smart card)',
  },
  'sign_in.lockout': {
    code: 82002,
    description: 'Sign-ins at the hosted login page locked out for a userName and address, or an address, after repeated failures',
  },
  'sign_in.logout': {
    code: 82003,
    description: 'A person signed out, ended another of their sessions, or signed in again at the same browser: that session ended',
  },
  'session.end': {
    code: 82004,
    description:
      'Browser sessions ended other than by signing out (reason: administrator, user_disabled, password_changed, certificate_revoked, sign_in_policy)',
  },
  'oidc_client.configure': {
    code: 83001,
    description: "A system account's OpenID Connect client settings set or replaced (redirect URIs, public, first-party, refresh tokens)",
  },
  'oidc_client.remove': { code: 83002, description: 'A system account taken out of the authorization code flow' },
  'authorization_code.issue': { code: 83010, description: 'Authorization code issued to a client for a signed-in person' },
  'authorization_code.redeem': {
    code: 83011,
    description:
      'No longer written (kept to read older rows): a redeemed code is the token.issue event with method authorization_code and its grantId, a refused one authorization_code.reject',
  },
  'authorization_code.replay': { code: 83012, description: 'An authorization code used again: refused, and every token issued from it revoked' },
  'authorization_code.reject': { code: 83013, description: 'An authorization code refused (expired, another client, wrong redirect_uri or code_verifier)' },
  'authorization.deny': {
    code: 83014,
    description: 'An authorization request answered with an error to the client (login_required, consent_required, access_denied...)',
  },
  'refresh_token.rotate': { code: 83020, description: 'Refresh token used and replaced by a new one' },
  'refresh_token.reuse': { code: 83021, description: 'A rotated refresh token used again: its whole family revoked' },
  'refresh_token.revoke': {
    code: 83023,
    description: 'A client revoked one of its refresh tokens (RFC 7009): its grant and every token issued from it revoked',
  },
  'refresh_token.reject': { code: 83022, description: 'A refresh token refused (unknown, expired, revoked, another client, person disabled)' },
  'oidc.logout': { code: 83030, description: "RP-initiated logout: the person's session ended, and the refresh tokens bound to it revoked" },

  'deliveryGateway.create': { code: 90001, description: 'Push gateway created' },
  'deliveryGateway.replace': { code: 90002, description: 'Push gateway replaced' },
  'deliveryGateway.delete': { code: 90003, description: 'Push gateway deleted' },
  'deliveryGateway.test': {
    code: 90004,
    description:
      'Push gateway test-sent: one notification straight to its hub (outcome failure when the hub refused it or gave no answer; never the push handle)',
  },
  'authenticatorPolicy.create': { code: 91001, description: 'Authenticator policy created' },
  'authenticatorPolicy.replace': { code: 91002, description: 'Authenticator policy replaced' },
  'authenticatorPolicy.delete': { code: 91003, description: 'Authenticator policy deleted' },
  'authenticator.register': { code: 92001, description: 'Authenticator app registered for a person (never its push handle)' },
  'authenticator.rename': { code: 92002, description: 'Authenticator app renamed' },
  'authenticator.remove': { code: 92003, description: 'Authenticator app removed (reason: request, or userDisabled when its person was disabled)' },
  'pushNotification.deadLetter': {
    code: 93001,
    description: 'Push notification given up after its last attempt (with the gateway, the attempts and the last answer)',
  },
  'authenticator.stale': {
    code: 93002,
    description: "Authenticator app marked stale: its gateway's hub called its push handle gone (410); it gets no notification until registered again",
  },
  'backchannel.request': {
    code: 94001,
    description: 'CIBA authentication request accepted for a person and pushed to their authenticator apps (never the auth_req_id or the binding message)',
  },
  'backchannel.request_refused': {
    code: 94002,
    description: 'CIBA authentication request refused after client authentication (reason: unknownUser, operator, noAuthenticator, tooManyPending)',
  },
  'backchannel.approve': { code: 94003, description: "CIBA request approved with the signature of one of the person's authenticator apps" },
  'backchannel.deny': { code: 94004, description: "CIBA request denied with the signature of one of the person's authenticator apps" },
  'backchannel.ping': {
    code: 94005,
    description: "CIBA ping to the client's notification endpoint (outcome failure: not delivered; the client may still poll)",
  },
} as const satisfies Record<string, CatalogueEntry>;

export type AuditAction = keyof typeof AUDIT_CATALOGUE;

export function auditCodeOf(action: AuditAction): number {
  return AUDIT_CATALOGUE[action].code;
}

/** docs/audit-events.md: the catalogue as a table, in code order. */
export function auditCatalogueMarkdown(): string {
  const rows = Object.entries(AUDIT_CATALOGUE)
    .sort(([, a], [, b]) => a.code - b.code)
    .map(([action, { code, description }]) => `| ${code} | \`${action}\` | ${description} |`);
  return [
    '# Audit event codes',
    '',
    '<!-- Generated from libs/audit/src/audit-catalogue.ts by `npm run docs:audit`; edit the catalogue, not this file. -->',
    '',
    'Every state change and every security event writes one row to the append-only audit log, in the',
    'transaction of the change it records, with the stable numeric code below (docs/contract/CREDENTIAL-MANAGEMENT.md,',
    '"Events"). Read them with `GET /admin/v1/organizations/{org}/audit-events?code=10000` (or `action=device.*`),',
    'or `npm run cli -- audit query --code 10000`. Each event names the actor (Client ID or userName), the target,',
    "the outcome, the source address and the request's correlation id (the `X-Correlation-ID` response header);",
    'never a secret, PIN, OATH seed or key.',
    '',
    'A failed sign-in (80003, 80004, 82001, 82002) or a refused CIBA request (94002) names the Client ID or',
    'userName the caller claimed only when it names an existing account of the organization. Any other',
    'text, perhaps a secret typed into the identity field, is recorded as `<unknown: N chars, #h>` (the form',
    'of a Client ID or userName) or `<malformed: N chars, #h>` (any other), where `h` is a keyed hash: the',
    'same text always gives the same `h`, so repeated tries show, and whoever holds `SECRET_PEPPER` can',
    'compute the `h` of a name to look for (DECISIONS 11):',
    '',
    '```sh',
    'node -e \'const c=require("node:crypto");const [p,t]=process.argv.slice(1);const k=Buffer.from(c.hkdfSync("sha256",Buffer.from(p),Buffer.alloc(0),"audit-claimed-identity/v1",32));console.log(c.createHmac("sha256",k).update(t).digest("hex").slice(0,16))\' "$SECRET_PEPPER" \'name-to-look-for\'',
    '```',
    '',
    '| Code | Action | Meaning |',
    '| ---: | --- | --- |',
    ...rows,
    '',
    ...TAMPER_EVIDENCE_MARKDOWN,
  ].join('\n');
}

/** The "Tamper evidence" section of docs/audit-events.md (kept here, beside the preamble, because `npm run docs:audit` builds this one file; the encoding is `audit-chain.ts`). */
export const TAMPER_EVIDENCE_MARKDOWN = [
  '## Tamper evidence',
  '',
  "Each organization's events form a hash chain, and the platform's own events (no organization) one more",
  '(DECISIONS 11.2). About a second after an event commits, the chainer gives it `chainSeq` (its position,',
  'from 1), `prevDigest` (the digest before it; 64 zeros for the first) and `digest`:',
  '',
  '```',
  'digest = lowercase hex SHA-256( UTF-8( canonical-JSON({',
  '  "v": 1, "id": "<event id, decimal string>", "org": <org id or null>,',
  '  "occurred": "<occurred_at, UTC, YYYY-MM-DDTHH:MM:SS.ffffffZ>", "actor": ..., "action": ..., "code": <number>,',
  '  "target": ..., "outcome": ..., "sourceAddress": ..., "correlationId": ..., "details": {...}, "prev": "<prevDigest>" })))',
  '```',
  '',
  'Canonical JSON: object members sorted by name (UTF-16 code units, as RFC 8785), no whitespace, strings and',
  'numbers as ECMAScript `JSON.stringify` writes them; absent values are `null`. `chainSeq` is not covered: the',
  '`prev` link fixes the order. A walk of the chain names the first event changed (its content no longer gives',
  'its digest, or the next event no longer links to it), removed (a position missing) or inserted (an event',
  'its successor skips).',
  '',
  "Every `AUDIT_CHECKPOINT_EVENTS` events or `AUDIT_CHECKPOINT_INTERVAL_S` seconds a chain's head is signed in the HSM",
  '(key `AUDIT_KEY`, ES256, raw r||s base64url) over the UTF-8 canonical JSON of',
  '`{"v": 1, "type": "audit-checkpoint", "org": ..., "seq": <position>, "digest": "<digest there>", "signedAt": "<ISO 8601 UTC, ms>"}`.',
  'The public key is the JWK Set at `GET /audit/v1/checkpoint-key` (the checkpoint names it by its `kid`). The platform',
  "administrator verifies a chain with `GET /admin/v1/audit-verification?org=acme` (no `org`: the platform's own events)",
  'or `npm run cli -- audit verify acme [--from <position>]`: the answer names the first event changed, removed or',
  'inserted, a refused checkpoint, or a chain recomputed or truncated behind a checkpoint, else `verified` with the',
  'last checkpoint everything verifies against. What this does not prove: a change after the last checkpoint is',
  'seen only at the next one; an event inserted before the chainer took it is chained like any other; whoever holds',
  'both the database and the HSM can rewrite history. An export of a chain verifies without the database (below).',
  '',
  '### Offline verification',
  '',
  '`npm run cli -- audit export acme [--from <position>] [--out acme.jsonl]` (opens the HSM for the public key',
  "only; no `org`: the platform's own chain) writes one chain as JSON lines: first",
  '`{"format": "audit-export/1", "org": ..., "from": <position>, "key": <the checkpoint key as a JWK>}`, then every',
  'chained event `{"type": "event", "chain_seq": ..., "prev_digest": ..., "digest": ..., "content": {...}}` (`content`',
  'is exactly the object above, `prev` included: `digest` is the SHA-256 of its canonical JSON), then every checkpoint',
  '`{"type": "checkpoint", "org", "seq", "digest", "signedAt", "keyId", "message": "<the exact text signed>",',
  '"signature": "<raw r||s, base64url>"}`. It verifies with no database, in either of two ways:',
  '',
  '1. `npm run cli -- audit verify-export acme.jsonl --key checkpoint-key.json` on any machine with the command',
  '   line (no database, no HSM): the same walk and checkpoint check as `audit verify`, naming the first event',
  '   changed, removed or inserted (and its line), or a refused checkpoint; exit code 1 then. `--key` takes the',
  '   JWK Set of `GET /audit/v1/checkpoint-key`, one JWK or a PEM public key; without it the key of the first line',
  '   is used and the answer says `"source": "export"`: compare its `kid` with the published key, or it proves nothing.',
  "2. With none of the platform's code: `node ops/audit-export-offline.js acme.jsonl out/` (plain Node.js,",
  "   `node:crypto` only) recomputes every digest and link, checks each checkpoint's message against the digest at",
  '   its position, and writes `out/checkpoint-<seq>.msg` (the bytes signed), `out/checkpoint-<seq>.sig.der` and',
  '   `out/pub.pem` (the key of the first line; use your own copy of the published key instead if you have it).',
  '   Then, for each checkpoint, `openssl dgst -sha256 -verify out/pub.pem -signature out/checkpoint-<seq>.sig.der',
  '   out/checkpoint-<seq>.msg` prints `Verified OK`. openssl wants an ECDSA signature in DER, not the JWS form: the',
  '   64 bytes r||s (base64url) become `30 L 02 Lr r 02 Ls s` (RFC 3279 §2.2.3), where r and s are each 32 bytes',
  '   big-endian with leading zero bytes dropped and one 00 put back when the first byte is 80 or above, Lr and Ls',
  "   their lengths, L = 2 + Lr + 2 + Ls. A single event's digest can be checked by hand as well:",
  '   `printf \'%s\' "<canonical JSON of its content>" | openssl dgst -sha256`.',
  '',
  'What a verified export proves: every event in it, up to the last checkpoint it holds, is the one the platform',
  'chained and signed, none removed, none inserted, none changed (the audit key in the HSM signed the head they',
  'lead to). What it does not: events after the last checkpoint are only consistent among themselves (a rewritten',
  'or truncated tail is not seen until the next checkpoint); an export with `--from` trusts the digest at its first',
  'position; an export cut short after a checkpoint looks like an older, complete one (compare its last checkpoint',
  'with `audit verify`); and whoever holds both the database and the HSM can produce a new history that verifies.',
  '',
  '### Retention',
  '',
  "An organization's `settings.auditRetentionDays` (at least `AUDIT_RETENTION_MIN_DAYS`; absent: for ever) says how long",
  'its events stay (DECISIONS 11.3). The retention job removes the oldest events of a chain only up to a signed',
  'checkpoint that has nothing younger than the retention before it, after checking that what it removes leads to',
  'the digest that checkpoint signed; events after the last checkpoint stay, however old. Each removal is a',
  'platform event `audit.pruned` (76001). `audit verify` then starts at the position after that checkpoint, anchored',
  'on its signed digest, and answers `pruned: {through, events, at, checkpoint}`. An export of a pruned chain has',
  '`"pruned": {"through": <position>, "events": <count>, "at": ...}` in its first line and `from` = `through` + 1; the',
  'checkpoint at `through` is among its lines, and the first event must link to its digest (`audit verify-export`',
  "and `ops/audit-export-offline.js` check that; openssl checks that checkpoint's signature like the others).",
  '',
];
