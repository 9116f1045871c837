#!/usr/bin/env node
'use strict';
// `npm run bench:bearer`: the per-request cost of checking a bearer access token, four ways, on the
// same ES256 access token shape the service issues, signed by JWT_KEY in a fresh SoftHSM2 token and
// verified with that key's public key:
//   - @nestjs/passport's AuthGuard('jwt') over passport-jwt's JwtStrategy (what the design brief
//     suggested), as Nest runs it: canActivate -> passport.authenticate -> jsonwebtoken.verify;
//   - jose's jwtVerify (the library the project uses for other JWS);
//   - the project's BearerGuard on a verify-once cache miss (AccessTokenValidator -> JwsService,
//     node:crypto), and on a cache hit (the same token again, as a client presents it many times).
// Each "miss" operation checks a token never seen before (tokens are signed up front); each round
// runs every candidate once over all tokens, interleaved, so machine noise falls on all alike.
// Prints, per candidate, the median over BENCH_ROUNDS (7) rounds of BENCH_TOKENS (4000) checks of
// wall time and of this process's CPU time per check, with the lowest and highest round.
// Only the check is measured: the token-state lookup behind the guard (an in-memory map hit in the
// service) is a stand-in here, and so is the HTTP request around it.
const { createPublicKey, randomUUID } = require('node:crypto');
const { mkdtempSync, rmSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const { ROOT, ensureDependencies, ensureDebianPackages, build } = require('../setup');

const rounds = Number(process.env.BENCH_ROUNDS || 7);
const tokensPerRound = Number(process.env.BENCH_TOKENS || 4000);

ensureDependencies();
ensureDebianPackages([{ name: 'softhsm2', binary: 'softhsm2-util' }]);
build();

main().catch((error) => {
  console.error(error);
  process.exit(1);
});

async function main() {
  require('reflect-metadata');
  const { provisionSoftHsmToken } = require(join(ROOT, 'dist/libs/hsm/src/softhsm-provisioning'));
  const { Pkcs11Hsm, Pkcs11Signer } = require(join(ROOT, 'dist/libs/hsm/src'));
  const { JwsService } = require(join(ROOT, 'dist/libs/auth/src/tokens/jws.service'));
  const { AccessTokenValidator } = require(join(ROOT, 'dist/libs/auth/src/tokens/access-token-validator'));
  const { BearerGuard } = require(join(ROOT, 'dist/libs/auth/src/http/bearer.guard'));
  const { Reflector } = require('@nestjs/core');
  const { AuthGuard, PassportStrategy } = require('@nestjs/passport');
  const { Strategy: JwtStrategy, ExtractJwt } = require('passport-jwt');
  const jose = require('jose');

  const folder = mkdtempSync(join(tmpdir(), 'bearer-bench-'));
  const token = { directory: folder, tokenLabel: 'bench', soPin: '12345678', pin: '87654321', keyLabel: 'JWT_KEY' };
  const { modulePath } = provisionSoftHsmToken(token);
  const hsm = await Pkcs11Hsm.connect({ modulePath, tokenLabel: 'bench', pin: token.pin });
  try {
    const publicJwk = { ...hsm.jwsKey.publicJwk };
    const publicKey = createPublicKey({ key: publicJwk, format: 'jwk' });
    // JWT_KEY as the token path holds it (SigningKeys' ring: ref undefined = the Signer's own key),
    // and a key ring of that one key in place of SigningKeys (which reads signing_keys in PostgreSQL).
    const signingKey = { kid: publicJwk.kid, algorithm: hsm.jwsKey.algorithm, ref: undefined, verifyKey: { key: publicKey, dsaEncoding: 'ieee-p1363' } };
    const keyRing = { active: () => signingKey, published: (kid) => (kid === signingKey.kid ? signingKey : undefined) };
    const jws = new JwsService(new Pkcs11Signer(hsm), keyRing);
    const publicPem = publicKey.export({ type: 'spki', format: 'pem' });
    const joseKey = await jose.importJWK(publicJwk, 'ES256');

    // The access token the service issues (libs/auth token.service.ts), one per check.
    const issuer = 'http://localhost:8080/authentication/customer/acme';
    const audience = 'http://localhost:8080';
    const sign = () => {
      const iat = Math.floor(Date.now() / 1000);
      const claims = { iss: issuer, sub: 'acme-billing', aud: audience, client_id: 'acme-billing', org: 'acme', role: 'Issuance' };
      return jws.sign('at+jwt', { ...claims, scope: 'Scope.device_management', jti: randomUUID(), iat, exp: iat + 3600 }, signingKey);
    };
    const signBatch = async () => Promise.all(Array.from({ length: tokensPerRound }, sign));

    // A Nest execution context around a request that carries the token, as a guard receives it.
    const handler = () => undefined;
    class BenchController {}
    const contextFor = (accessToken) => {
      const request = { headers: { authorization: `Bearer ${accessToken}` } };
      const response = {};
      return { getHandler: () => handler, getClass: () => BenchController, switchToHttp: () => ({ getRequest: () => request, getResponse: () => response }) };
    };

    // @nestjs/passport + passport-jwt, configured as their documentation shows, with the same checks
    // the service makes (algorithm, issuer, audience, expiry). Two key forms: the KeyObject (parsed
    // once) and the PEM string of passport-jwt's examples (jsonwebtoken parses it on every verify).
    const jwtOptions = (secretOrKey) => ({
      jwtFromRequest: ExtractJwt.fromAuthHeaderAsBearerToken(),
      secretOrKey,
      algorithms: ['ES256'],
      issuer,
      audience,
    });
    class KeyObjectJwtStrategy extends PassportStrategy(JwtStrategy, 'jwt-keyobject') {
      constructor() {
        super(jwtOptions(publicKey));
      }
      validate(payload) {
        return payload;
      }
    }
    class PemJwtStrategy extends PassportStrategy(JwtStrategy, 'jwt-pem') {
      constructor() {
        super(jwtOptions(publicPem));
      }
      validate(payload) {
        return payload;
      }
    }
    new KeyObjectJwtStrategy();
    new PemJwtStrategy();
    const passportKeyObjectGuard = new (AuthGuard('jwt-keyobject'))();
    const passportPemGuard = new (AuthGuard('jwt-pem'))();

    // The project's guard, on an in-memory token state (what its TokenStateCache answers for a token in use).
    const bearerGuard = () => {
      const now = new Date();
      const state = {
        org_id: 'acme',
        issued_at: now,
        expires_at: new Date(now.getTime() + 3_600_000),
        first_used_at: now,
        revoked_at: null,
        subject_kind: 'system_account',
        subject_id: randomUUID(),
        subject_name: 'acme-billing',
        role: 'Issuance',
        disabled: false,
        organization_administrator: false,
        platform_administrator: false,
        groups: [],
        application_id_policy: 'any',
      };
      const cache = { mark: () => 0, get: () => state, set: () => undefined };
      const repository = { findState: async () => state, markFirstUse: async () => undefined };
      const clock = { now: () => new Date() };
      // A new validator starts with an empty verify-once cache.
      const validator = new AccessTokenValidator(jws, repository, cache, clock, { tokenUnusedTimeoutS: 300 });
      // No session cookie on these requests (SessionAuthentication answers no without reading anything).
      const sessions = { offersSession: () => false };
      return new BearerGuard(new Reflector(), validator, sessions);
    };

    const expectAllowed = (allowed) => {
      if (allowed !== true) throw new Error('a check refused a valid token');
    };
    const candidates = [
      {
        name: '@nestjs/passport AuthGuard + passport-jwt, KeyObject key',
        check: async (accessToken) => expectAllowed(await passportKeyObjectGuard.canActivate(contextFor(accessToken))),
      },
      {
        name: '@nestjs/passport AuthGuard + passport-jwt, PEM key',
        check: async (accessToken) => expectAllowed(await passportPemGuard.canActivate(contextFor(accessToken))),
      },
      {
        name: 'jose jwtVerify (typ at+jwt, iss, aud, ES256)',
        check: async (accessToken) => {
          const { payload } = await jose.jwtVerify(accessToken, joseKey, { algorithms: ['ES256'], typ: 'at+jwt', issuer, audience });
          if (payload.org !== 'acme') throw new Error('wrong claims');
        },
      },
      {
        name: 'BearerGuard, verify-once cache miss (node:crypto)',
        perRound: bearerGuard,
        check: async (accessToken, guard) => expectAllowed(await guard.canActivate(contextFor(accessToken))),
      },
      {
        name: 'BearerGuard, verify-once cache hit',
        perRound: () => ({ guard: bearerGuard(), token: undefined }),
        check: async (accessToken, hit) => {
          hit.token ??= accessToken;
          expectAllowed(await hit.guard.canActivate(contextFor(hit.token)));
        },
      },
    ];

    const results = new Map(candidates.map((c) => [c.name, { wall: [], cpu: [] }]));
    const runRound = async (record) => {
      const tokens = await signBatch();
      for (const candidate of candidates) {
        const perRound = candidate.perRound?.();
        const cpuBefore = process.cpuUsage();
        const started = process.hrtime.bigint();
        for (const accessToken of tokens) await candidate.check(accessToken, perRound);
        const wallUs = Number(process.hrtime.bigint() - started) / 1000 / tokens.length;
        const cpu = process.cpuUsage(cpuBefore);
        if (record) {
          results.get(candidate.name).wall.push(wallUs);
          results.get(candidate.name).cpu.push((cpu.user + cpu.system) / tokens.length);
        }
      }
    };
    await runRound(false); // warm-up: JIT, key imports, first allocations
    for (let round = 0; round < rounds; round++) await runRound(true);

    const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
    const us = (value) => value.toFixed(1).padStart(6);
    console.log(`Bearer access-token check (ES256), median of ${rounds} rounds of ${tokensPerRound} checks; [lowest-highest round]`);
    console.log(`  ${'candidate'.padEnd(58)} ${'wall us/check'.padStart(22)}  ${'CPU us/check'.padStart(22)}  checks/s`);
    for (const [name, { wall, cpu }] of results) {
      const range = (values) => `[${us(Math.min(...values)).trim()}-${us(Math.max(...values)).trim()}]`.padStart(15);
      console.log(
        `  ${name.padEnd(58)} ${us(median(wall))} ${range(wall)}  ${us(median(cpu))} ${range(cpu)}  ${Math.round(1e6 / median(wall))
          .toLocaleString('en-US')
          .padStart(8)}`,
      );
    }
    console.log(
      `load average at the end: ${require('node:os')
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')} (2 cores shared with other work)`,
    );
  } finally {
    await hsm.close();
    rmSync(folder, { recursive: true, force: true });
  }
}
