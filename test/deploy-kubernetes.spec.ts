import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import * as ts from 'typescript';
import { ObjectMeta } from '@kubernetes-models/apimachinery/apis/meta/v1/ObjectMeta';
import { DockerfileParser } from 'dockerfile-ast';
import { ROOT, documentedVariables, isSecretName, read, yamlDocuments } from './support/deploy-files';

/**
 * deploy/kubernetes/, validated offline. Every object of a built-in kind is checked against the
 * Kubernetes API's OpenAPI schema (kubernetes-models 4, whose validators are generated from it), and
 * for unknown or misspelt fields, which that schema allows but the API server's strict field
 * validation refuses, through the same package's TypeScript types. No package ships the
 * CloudNativePG CRD schemas, so of those objects only the metadata is schema-checked; the project's
 * own rules below cover the fields the service depends on.
 */

type Manifest = Record<string, unknown> & { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; labels?: Record<string, string> } };

const DIRECTORY = 'deploy/kubernetes';
const [kustomization] = yamlDocuments(`${DIRECTORY}/kustomization.yaml`, 'kubernetes') as [{ resources: string[] }];
const files = kustomization.resources.map((file) => ({ file, documents: yamlDocuments(`${DIRECTORY}/${file}`, 'kubernetes') as Manifest[] }));
const manifests = files.flatMap(({ file, documents }) => documents.map((manifest) => ({ file, manifest })));
const builtIn = (m: Manifest) => !m.apiVersion.includes('cnpg.io');
const find = <T = Manifest>(kind: string, name?: string): T => {
  const found = manifests.filter(({ manifest }) => manifest.kind === kind && (name === undefined || manifest.metadata.name === name));
  expect(found.map(({ manifest }) => `${manifest.kind}/${manifest.metadata.name}`)).toHaveLength(1);
  return found[0].manifest as unknown as T;
};

/** The model class of a built-in kind: kubernetes-models lays them out as `<apiVersion>/<Kind>`. */
function modelOf(manifest: Manifest): new (data: unknown) => { validate(): void } {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const module = require(`kubernetes-models/${manifest.apiVersion}/${manifest.kind}`) as Record<string, new (data: unknown) => { validate(): void }>;
  return module[manifest.kind];
}

/** TypeScript's excess-property check of each object literal against the kind's API type. */
function unknownFieldProblems(documents: Manifest[]): string[] {
  const file = join(ROOT, '__kubernetes_manifests__.ts');
  const source = documents
    .map((m, i) => `import type { I${m.kind} as T${i} } from 'kubernetes-models/${m.apiVersion}/${m.kind}';\nexport const m${i}: T${i} = ${JSON.stringify(m)};`)
    .join('\n');
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.Node16,
    moduleResolution: ts.ModuleResolutionKind.Node16,
    skipLibCheck: true,
    types: [],
  };
  const host = ts.createCompilerHost(options);
  const { getSourceFile, fileExists } = host;
  host.getSourceFile = (name, language, ...rest) => (name === file ? ts.createSourceFile(name, source, language) : getSourceFile(name, language, ...rest));
  host.fileExists = (name) => name === file || fileExists(name);
  const program = ts.createProgram([file], options, host);
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const line = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start).line : -1;
    const index = Number(/^export const m(\d+)/m.exec(source.split('\n')[line] ?? '')?.[1] ?? -1);
    const where = documents[index] ? `${documents[index].kind}/${documents[index].metadata.name}` : 'manifest';
    return `${where}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`;
  });
}

describe('Kubernetes manifests (deploy/kubernetes)', () => {
  it('the kustomization lists every manifest and transforms nothing, so what is validated is what is applied', () => {
    const yamlFiles = readdirSync(join(ROOT, DIRECTORY)).filter((f) => /\.ya?ml$/.test(f) && f !== 'kustomization.yaml');
    expect([...kustomization.resources].sort()).toEqual(yamlFiles.sort());
    expect(Object.keys(kustomization).sort()).toEqual(['apiVersion', 'kind', 'resources']);
  });

  it('every built-in object is valid against the Kubernetes API schema', () => {
    const checked = manifests.filter(({ manifest }) => builtIn(manifest));
    expect(checked.length).toBeGreaterThanOrEqual(12);
    for (const { file, manifest } of checked) {
      let problem: string | undefined;
      try {
        new (modelOf(manifest))(manifest).validate();
      } catch (error) {
        problem = (error as Error).message;
      }
      expect({ file, object: `${manifest.kind}/${manifest.metadata.name}`, problem }).toEqual({
        file,
        object: `${manifest.kind}/${manifest.metadata.name}`,
        problem: undefined,
      });
    }
  });

  it('no built-in object has a field the API does not know (strict field validation)', () => {
    expect(unknownFieldProblems(manifests.map(({ manifest }) => manifest).filter(builtIn))).toEqual([]);
  });

  it('both checks can fail: a wrong type and a misspelt field are reported', () => {
    const deployment = structuredClone(find('Deployment')) as Manifest & { spec: { template: { spec: { containers: Record<string, unknown>[] } } } };
    const container = deployment.spec.template.spec.containers[0];
    container.readinessProbe = { ...(container.readinessProbe as object), periodSecondz: 5 };
    expect(unknownFieldProblems([deployment])).toEqual([expect.stringMatching(/Deployment\/credential-platform: .*periodSecondz/)]);
    container.ports = [{ containerPort: 'http' }];
    expect(() => new (modelOf(deployment))(deployment).validate()).toThrow(/containerPort must be integer/);
  });

  it('the CloudNativePG objects have valid metadata (their CRD schemas are not available offline)', () => {
    const custom = manifests.filter(({ manifest }) => !builtIn(manifest)).map(({ manifest }) => manifest);
    expect(custom.map((m) => `${m.apiVersion} ${m.kind}`)).toEqual([
      'postgresql.cnpg.io/v1 Cluster',
      'barmancloud.cnpg.io/v1 ObjectStore',
      'postgresql.cnpg.io/v1 ScheduledBackup',
    ]);
    for (const m of custom) expect(() => new ObjectMeta(m.metadata).validate()).not.toThrow();
  });

  it('puts every object in the namespace, which enforces the restricted Pod Security profile', () => {
    const namespace = find('Namespace');
    expect(namespace.metadata.labels?.['pod-security.kubernetes.io/enforce']).toBe('restricted');
    for (const { manifest } of manifests.filter(({ manifest }) => manifest.kind !== 'Namespace')) {
      expect([manifest.kind, manifest.metadata.name, manifest.metadata.namespace]).toEqual([manifest.kind, manifest.metadata.name, namespace.metadata.name]);
    }
  });
});

describe('the Deployment', () => {
  type Probe = { httpGet: { path: string; port: string }; periodSeconds: number; failureThreshold: number; timeoutSeconds: number };
  type Container = {
    name: string;
    image: string;
    ports?: { name: string; containerPort: number }[];
    env?: { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }[];
    envFrom?: { configMapRef: { name: string } }[];
    startupProbe?: Probe;
    livenessProbe?: Probe;
    readinessProbe?: Probe;
    lifecycle?: { preStop: { exec: { command: string[] } } };
    resources: { requests: Record<string, string>; limits: Record<string, string> };
    securityContext: Record<string, unknown> & { capabilities: { drop: string[] } };
    volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
  };
  type Volume = { name: string; secret?: { secretName: string; items: { key: string; path: string }[]; defaultMode?: number }; emptyDir?: object };
  type PodSpec = {
    securityContext: Record<string, unknown>;
    terminationGracePeriodSeconds: number;
    automountServiceAccountToken: boolean;
    initContainers: Container[];
    containers: Container[];
    volumes: Volume[];
  };
  const deployment = find<{
    spec: { replicas?: number; selector: { matchLabels: Record<string, string> }; template: { metadata: { labels: Record<string, string> }; spec: PodSpec } };
  }>('Deployment');
  const pod = deployment.spec.template.spec;
  const api = pod.containers.find((c) => c.name === 'api')!;
  const configMap = find<{ metadata: { name: string }; data: Record<string, string> }>('ConfigMap');
  const cluster = find<{ metadata: { name: string }; spec: Record<string, unknown> }>('Cluster');
  const env = Object.fromEntries(api.env!.map((e) => [e.name, e]));
  const mountOf = (path: string) => api.volumeMounts!.find((m) => path.startsWith(`${m.mountPath}/`));
  const runtimeUser = () => {
    const users = DockerfileParser.parse(read('Dockerfile'))
      .getInstructions()
      .filter((i) => i.getKeyword() === 'USER');
    return users.at(-1)!.getArgumentsContent()!.split(':').map(Number);
  };

  it('probes: startup on /health/live with room for migrations, liveness on /health/live, readiness on /health/ready', () => {
    expect(api.startupProbe!.httpGet).toEqual({ path: '/health/live', port: 'http' });
    expect(api.startupProbe!.periodSeconds * api.startupProbe!.failureThreshold).toBeGreaterThanOrEqual(120);
    expect(api.livenessProbe!.httpGet).toEqual({ path: '/health/live', port: 'http' });
    expect(api.readinessProbe!.httpGet).toEqual({ path: '/health/ready', port: 'http' });
    // Readiness turns red within about ten seconds; liveness tolerates a slow moment.
    expect(api.readinessProbe!.periodSeconds * api.readinessProbe!.failureThreshold).toBeLessThanOrEqual(10);
    expect(api.livenessProbe!.periodSeconds * api.livenessProbe!.failureThreshold).toBeGreaterThanOrEqual(30);
    expect(api.ports).toEqual([
      { name: 'http', containerPort: 8080, protocol: 'TCP' },
      { name: 'metrics', containerPort: 9464, protocol: 'TCP' },
    ]);
    expect(env.PORT.value).toBe('8080');
    expect(env.METRICS_PORT.value).toBe('9464');
    // The service binds metrics to loopback by default; Prometheus scrapes from another pod.
    expect(env.METRICS_HOST.value).toBe('0.0.0.0');
  });

  it('terminates gracefully: the grace period outlasts preStop plus the service shutdown deadline of 15 s', () => {
    const deadline = Number(/SHUTDOWN_DEADLINE_MS = ([\d_]+)/.exec(read('apps/api/src/main.ts'))![1].replace(/_/g, '')) / 1000;
    expect(deadline).toBe(15);
    const [command, seconds] = api.lifecycle!.preStop.exec.command;
    expect(command).toBe('sleep');
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(Number(seconds) + deadline);
  });

  it('every container has resource requests and limits and the restricted security context; the user is the image user', () => {
    const [uid, gid] = runtimeUser();
    expect(pod.securityContext).toEqual({ runAsNonRoot: true, runAsUser: uid, runAsGroup: gid, fsGroup: gid, seccompProfile: { type: 'RuntimeDefault' } });
    expect(pod.automountServiceAccountToken).toBe(false);
    for (const container of [...pod.initContainers, ...pod.containers]) {
      expect(Object.keys(container.resources.requests).sort()).toEqual(['cpu', 'memory']);
      expect(container.resources.limits.memory).toBeDefined();
      expect(container.securityContext).toEqual({
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        runAsNonRoot: true,
        capabilities: { drop: ['ALL'] },
      });
    }
  });

  it('sets NODE_ENV=production and everything production requires (libs/config), secrets only from Secrets', () => {
    expect(env.NODE_ENV.value).toBe('production');
    expect(api.envFrom).toEqual([{ configMapRef: { name: configMap.metadata.name } }]);
    const configured = new Set([...Object.keys(env), ...Object.keys(configMap.data)]);
    for (const required of ['DATABASE_URL', 'SECRET_PEPPER', 'DATA_ENCRYPTION_KEYS', 'PKCS11_MODULE', 'PKCS11_PIN_FILE', 'PLATFORM_ADMIN_SECRET']) {
      expect({ required, configured: configured.has(required) }).toEqual({ required, configured: true });
    }
    for (const variable of api.env!) {
      if (isSecretName(variable.name))
        expect({ name: variable.name, from: Object.keys(variable.valueFrom ?? {}) }).toEqual({ name: variable.name, from: ['secretKeyRef'] });
    }
    for (const key of Object.keys(configMap.data)) expect({ key, secret: isSecretName(key) }).toEqual({ key, secret: false });
  });

  it('reads only variables the service documents (README, Configuration), plus the TLS ones of node-postgres and Node', () => {
    const known = documentedVariables();
    expect(known.size).toBeGreaterThan(30);
    for (const name of [...Object.keys(env), ...Object.keys(configMap.data)]) {
      expect({ name, known: known.has(name) || ['PGSSLMODE', 'NODE_EXTRA_CA_CERTS'].includes(name) }).toEqual({ name, known: true });
    }
  });

  it('takes the database from the CloudNativePG cluster: its app Secret (the -rw Service) and its CA', () => {
    expect(env.DATABASE_URL.valueFrom!.secretKeyRef).toEqual({ name: `${cluster.metadata.name}-app`, key: 'uri' });
    expect(configMap.data.PGSSLMODE).toBe('verify-full');
    const caMount = mountOf(env.NODE_EXTRA_CA_CERTS.value!)!;
    const caVolume = pod.volumes.find((v) => v.name === caMount.name)!;
    expect(caVolume.secret!.secretName).toBe(`${cluster.metadata.name}-ca`);
    expect(`${caMount.mountPath}/${caVolume.secret!.items[0].path}`).toBe(env.NODE_EXTRA_CA_CERTS.value);
  });

  it('mounts the PKCS#11 PIN as a file from a Secret and the vendor module from the init container', () => {
    const pinMount = mountOf(env.PKCS11_PIN_FILE.value!)!;
    const pinVolume = pod.volumes.find((v) => v.name === pinMount.name)!;
    expect(pinMount.readOnly).toBe(true);
    expect(`${pinMount.mountPath}/${pinVolume.secret!.items[0].path}`).toBe(env.PKCS11_PIN_FILE.value);
    // 0440 (octal): the pod's group reads it, nobody else.
    expect(pinVolume.secret!.defaultMode).toBe(0o440);
    const moduleMount = mountOf(configMap.data.PKCS11_MODULE)!;
    expect(moduleMount.readOnly).toBe(true);
    expect(pod.volumes.find((v) => v.name === moduleMount.name)!.emptyDir).toBeDefined();
    const init = pod.initContainers.find((c) => c.name === 'hsm-module')!;
    expect(init.volumeMounts).toEqual([{ name: moduleMount.name, mountPath: moduleMount.mountPath }]);
  });

  it('every Secret the pods need is either the operator’s or created by a command in deploy/README.md', () => {
    const readme = read('deploy/README.md');
    // Each `kubectl create secret generic` command with its continuation lines, and the keys it sets.
    const created = new Map<string, Set<string>>();
    for (const command of readme.matchAll(/kubectl -n credential-platform create secret generic (\S+)((?:[^\n]*\\\n)*[^\n]*)/g)) {
      created.set(command[1], new Set([...command[2].matchAll(/--from-(?:literal|file)=([^=\s]+)=/g)].map((m) => m[1])));
    }
    expect(created.size).toBeGreaterThan(0);
    const operatorMade = [`${cluster.metadata.name}-app`, `${cluster.metadata.name}-ca`];
    const needed: [string, string][] = [
      ...api.env!.filter((e) => e.valueFrom?.secretKeyRef).map((e) => [e.valueFrom!.secretKeyRef!.name, e.valueFrom!.secretKeyRef!.key] as [string, string]),
      ...pod.volumes.filter((v) => v.secret).flatMap((v) => v.secret!.items.map((i) => [v.secret!.secretName, i.key] as [string, string])),
    ];
    for (const [name, key] of needed.filter(([name]) => !operatorMade.includes(name))) {
      expect({ name, key, documented: created.get(name)?.has(key) ?? false }).toEqual({ name, key, documented: true });
    }
  });

  it('has no replica count (the autoscaler owns it) and a rollout that never lowers capacity', () => {
    expect(deployment.spec.replicas).toBeUndefined();
    expect((deployment.spec as { strategy?: unknown }).strategy).toEqual({ type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } });
  });

  describe('and the objects around it', () => {
    const labels = deployment.spec.template.metadata.labels;
    const selects = (selector: Record<string, string>) => Object.entries(selector).every(([k, v]) => labels[k] === v);

    it('the public Service exposes the http port only; metrics go through a headless Service', () => {
      const service = find<{ spec: { selector: Record<string, string>; ports: { targetPort: string; port: number }[]; clusterIP?: string } }>(
        'Service',
        'credential-platform',
      );
      expect(selects(service.spec.selector)).toBe(true);
      expect(service.spec.ports.map((p) => p.targetPort)).toEqual(['http']);
      expect(service.spec.ports.map((p) => p.port)).not.toContain(9464);
      const metrics = find<{ spec: { selector: Record<string, string>; ports: { targetPort: string }[]; clusterIP: string } }>(
        'Service',
        'credential-platform-metrics',
      );
      expect(metrics.spec.clusterIP).toBe('None');
      expect(selects(metrics.spec.selector)).toBe(true);
      expect(metrics.spec.ports.map((p) => p.targetPort)).toEqual(['metrics']);
      const ingress = find<{ spec: { rules: { http: { paths: { backend: { service: { name: string; port: { name: string } } } }[] } }[] } }>('Ingress');
      expect(ingress.spec.rules[0].http.paths[0].backend.service).toEqual({ name: 'credential-platform', port: { name: 'http' } });
    });

    it('the PodDisruptionBudget and the CPU autoscaler cover the Deployment', () => {
      const pdb = find<{ spec: { maxUnavailable: number; selector: { matchLabels: Record<string, string> } } }>('PodDisruptionBudget');
      expect(selects(pdb.spec.selector.matchLabels)).toBe(true);
      const hpa = find<{
        spec: {
          scaleTargetRef: { kind: string; name: string };
          minReplicas: number;
          maxReplicas: number;
          metrics: { resource: { name: string; target: { type: string } } }[];
        };
      }>('HorizontalPodAutoscaler');
      expect(hpa.spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: 'credential-platform' });
      expect(hpa.spec.metrics.map((m) => [m.resource.name, m.resource.target.type])).toEqual([['cpu', 'Utilization']]);
      expect(hpa.spec.minReplicas).toBeGreaterThan(pdb.spec.maxUnavailable + 1);
      expect(hpa.spec.maxReplicas).toBeGreaterThan(hpa.spec.minReplicas);
    });

    it('the database accepts every pod’s pool at the autoscaler’s maximum plus a rollout surge', () => {
      const hpa = find<{ spec: { maxReplicas: number } }>('HorizontalPodAutoscaler');
      // Each process's pool holds its change feed listener too (DATABASE_POOL_SIZE, README Configuration).
      const perPod = Number(configMap.data.DATABASE_POOL_SIZE) * Number(configMap.data.WORKERS);
      expect(perPod).toBeGreaterThanOrEqual(2);
      const maxConnections = Number((cluster.spec.postgresql as { parameters: { max_connections: string } }).parameters.max_connections);
      expect(maxConnections).toBeGreaterThanOrEqual((hpa.spec.maxReplicas + 1) * perPod + 10);
    });

    type Peer = {
      namespaceSelector?: { matchLabels: Record<string, string> };
      podSelector?: { matchLabels: Record<string, string> };
      ipBlock?: { cidr: string; except?: string[] };
    };
    type Rule = { from?: Peer[]; to?: Peer[]; ports: { port: string | number; protocol: string }[] };
    type Policy = {
      metadata: { name: string };
      spec: { podSelector: { matchLabels: Record<string, string> }; policyTypes: string[]; ingress?: Rule[]; egress?: Rule[] };
    };
    const policies = manifests.filter(({ manifest }) => manifest.kind === 'NetworkPolicy').map(({ manifest }) => manifest as unknown as Policy);

    it('NetworkPolicies: deny by default; in, the public port from the ingress controller and metrics from monitoring', () => {
      for (const policy of policies) expect(selects(policy.spec.podSelector.matchLabels)).toBe(true);
      expect(policies.some((p) => p.spec.policyTypes.includes('Ingress') && p.spec.policyTypes.includes('Egress') && !p.spec.ingress && !p.spec.egress)).toBe(
        true,
      );
      const ingressRules = policies.flatMap((p) => p.spec.ingress ?? []);
      expect(
        ingressRules.map((r) => [r.ports.map((p) => p.port), r.from!.map((f) => f.namespaceSelector?.matchLabels['kubernetes.io/metadata.name'])]),
      ).toEqual([
        [['http'], ['ingress-nginx']],
        [['metrics'], ['monitoring']],
      ]);
    });

    it('NetworkPolicies: out, DNS, the PostgreSQL cluster, the HSM, and https to public addresses only', () => {
      const egress = policies.flatMap((p) => p.spec.egress ?? []);
      expect(egress).toHaveLength(4);
      const [dns, database, hsm, https] = egress;
      expect(dns.ports).toEqual([
        { port: 53, protocol: 'UDP' },
        { port: 53, protocol: 'TCP' },
      ]);
      expect(database.to).toEqual([{ podSelector: { matchLabels: { 'cnpg.io/cluster': cluster.metadata.name } } }]);
      expect(database.ports).toEqual([{ port: 5432, protocol: 'TCP' }]);
      expect(hsm.to![0].ipBlock!.cidr).toMatch(/^[\d.]+\/\d+$/);
      // Push hubs and CIBA notification endpoints: port 443 of any public address, none of the private,
      // loopback, link-local (the cloud metadata address) or carrier-grade NAT ranges, in IPv4 or IPv6.
      expect(https.ports).toEqual([{ port: 443, protocol: 'TCP' }]);
      expect(https.to).toEqual([
        {
          ipBlock: {
            cidr: '0.0.0.0/0',
            except: ['0.0.0.0/8', '10.0.0.0/8', '100.64.0.0/10', '127.0.0.0/8', '169.254.0.0/16', '172.16.0.0/12', '192.168.0.0/16'],
          },
        },
        { ipBlock: { cidr: '::/0', except: ['::1/128', '::ffff:0:0/96', 'fc00::/7', 'fe80::/10'] } },
      ]);
    });

    it('PostgreSQL: a CloudNativePG cluster of 3 with synchronous replication and backups', () => {
      expect(cluster.spec.instances).toBe(3);
      expect((cluster.spec.postgresql as { synchronous: unknown }).synchronous).toEqual({ method: 'any', number: 1, dataDurability: 'required' });
      expect(cluster.spec.affinity).toMatchObject({ enablePodAntiAffinity: true, podAntiAffinityType: 'required' });
      const [plugin] = cluster.spec.plugins as { name: string; isWALArchiver: boolean; parameters: { barmanObjectName: string } }[];
      expect(plugin.isWALArchiver).toBe(true);
      find('ObjectStore', plugin.parameters.barmanObjectName);
      const backup = find<{ spec: { cluster: { name: string }; method: string; pluginConfiguration: { name: string } } }>('ScheduledBackup');
      expect(backup.spec.cluster.name).toBe(cluster.metadata.name);
      expect(backup.spec.pluginConfiguration.name).toBe(plugin.name);
    });
  });
});
