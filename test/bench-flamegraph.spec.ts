import { packageOf, samplesByPackage, samplesInWindow, shortUrl, type CpuProfile } from '../ops/bench/cpuprofile';
import { callTree, flameGraph, perfStacks } from '../ops/bench/flamegraph';
import { summarise } from '../ops/bench/profile-summary';

/**
 * The profile tools of issue 35 (docs/performance.md "Flame graphs"): ops/bench/cpuprofile.js reads
 * a V8 .cpuprofile over a window of it, ops/bench/flamegraph.js draws it. A made-up profile: the
 * root calls a handler of the platform (dist/), which calls a dependency twice over, and the idle loop.
 */
const frame = (id: number, functionName: string, url: string, children: number[] = []) => ({
  id,
  callFrame: { functionName, url, lineNumber: 9 },
  children,
});
const profile: CpuProfile = {
  nodes: [
    frame(1, '(root)', '', [2, 5, 6]),
    frame(2, 'handle', 'file:///srv/app/dist/libs/auth/src/token.js', [3, 4]),
    frame(3, 'query', 'file:///srv/app/node_modules/pg/lib/client.js'),
    frame(4, 'writev', ''),
    frame(5, '(idle)', ''),
    frame(6, '(garbage collector)', ''),
  ],
  // One sample a second: 0-3 s the handler in pg three times and in writev once, then idle twice, then GC.
  samples: [3, 3, 3, 4, 5, 5, 6],
  timeDeltas: [0, 1e6, 1e6, 1e6, 1e6, 1e6, 1e6],
};

describe('bench profile tools', () => {
  it('reads the samples of a window as stacks of labelled frames, leaving out the idle loop', () => {
    const all = samplesInWindow(profile, {});
    expect(all.all).toBe(7);
    expect(all.stacks).toEqual([
      ['handle dist/libs/auth/src/token.js:10', 'query ~/pg/lib/client.js:10'],
      ['handle dist/libs/auth/src/token.js:10', 'query ~/pg/lib/client.js:10'],
      ['handle dist/libs/auth/src/token.js:10', 'query ~/pg/lib/client.js:10'],
      ['handle dist/libs/auth/src/token.js:10', 'writev'],
      ['(garbage collector)'],
    ]);
    // The last 2.5 s: the two idle samples and the collector's.
    const last = samplesInWindow(profile, { last: 2.5 });
    expect([last.all, last.stacks]).toEqual([3, [['(garbage collector)']]]);
    expect(samplesInWindow(profile, { from: 0.5, to: 2.5 }).stacks).toHaveLength(2);
  });

  it('merges the stacks into a call tree counting each frame’s samples with its callees', () => {
    const tree = callTree(samplesInWindow(profile, {}).stacks);
    expect(tree.count).toBe(5);
    const handler = tree.children.get('handle dist/libs/auth/src/token.js:10')!;
    expect(handler.count).toBe(4);
    expect([...handler.children.values()].map(({ name, count }) => [name, count])).toEqual([
      ['query ~/pg/lib/client.js:10', 3],
      ['writev', 1],
    ]);
  });

  it('draws each frame as wide as its share, with its name, share and owner’s colour, and escapes names', () => {
    const svg = flameGraph([...samplesInWindow(profile, {}).stacks, ['<anonymous> & co']], { title: 'token "by" secret' });
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg).toContain('aria-label="token &quot;by&quot; secret"');
    const box = (name: string) => {
      const match = new RegExp(
        `<title>${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: (\\d+) samples, ([\\d.]+)%</title><rect x="[\\d.]+" y="\\d+" width="([\\d.]+)"[^>]* fill="hsl\\((\\d+),`,
      ).exec(svg);
      if (!match) throw new Error(`no box for ${name}`);
      return { samples: Number(match[1]), share: Number(match[2]), width: Number(match[3]), hue: Number(match[4]) };
    };
    const all = box('all');
    expect(all).toMatchObject({ samples: 6, share: 100 });
    expect(box('handle dist/libs/auth/src/token.js:10')).toMatchObject({ samples: 4, share: 66.7, hue: 28 });
    expect(box('query ~/pg/lib/client.js:10')).toMatchObject({ samples: 3, share: 50, hue: 50 });
    expect(box('query ~/pg/lib/client.js:10').width).toBeCloseTo((all.width * 3) / 6, 0);
    expect(box('writev')).toMatchObject({ samples: 1, hue: 0 });
    expect(box('&lt;anonymous&gt; &amp; co')).toMatchObject({ samples: 1 });
    expect(svg).not.toContain('<anonymous>');
  });

  it('leaves out frames narrower than the minimum width', () => {
    const stacks = [...Array.from({ length: 999 }, () => ['busy']), ['rare']];
    expect(flameGraph(stacks, { title: 't' })).toContain('<title>rare: 1 samples');
    expect(flameGraph(stacks, { title: 't', minWidth: 2 })).not.toContain('<title>rare');
  });

  it('reads perf script text: JavaScript from perf’s map labelled as V8’s, native frames with their library, a frame per thread', () => {
    const text = [
      'node  8222 ',
      '\t    7fd9b8403de4 JS:*issue /srv/app/dist/libs/auth/src/tokens/token.service.js:168:18 (/tmp/perf-8222.map)',
      '\t    7fd9b8403e00 JS:~query /srv/app/node_modules/pg/lib/client.js:668:8 (/tmp/perf-8222.map)',
      '\t         14ac8a7 uv_run (/usr/bin/node)',
      '',
      'node  8251 ',
      '\t         192bf8e ecp_nistz256_avx2_gather_w7 (/usr/bin/node)',
      '\t    7f0000000001 [unknown] ([unknown])',
      '\t    7f0000000002 [unknown] ([unknown])',
      '\t    7f0000000003 [unknown] (/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so)',
      '\t           2724a start_thread+0x2c (/usr/lib/x86_64-linux-gnu/libc.so.6)',
      '',
    ].join('\n');
    expect(perfStacks(text)).toEqual([
      ['thread 8222 node', 'uv_run [node]', 'query ~/pg/lib/client.js:668', 'issue dist/libs/auth/src/tokens/token.service.js:168'],
      // Frames of neither a known symbol nor a known library are unwinding noise.
      ['thread 8251 node', 'start_thread [libc.so.6]', '[unknown] [libsofthsm2.so]', 'ecp_nistz256_avx2_gather_w7 [node]'],
    ]);
    expect(perfStacks(text, '8251')).toEqual([['start_thread [libc.so.6]', '[unknown] [libsofthsm2.so]', 'ecp_nistz256_avx2_gather_w7 [node]']]);
    const svg = flameGraph(perfStacks(text), { title: 'perf' });
    expect(svg).toContain('<title>thread 8222 node: 1 samples, 50.0%</title>');
    expect(svg).toMatch(/<title>issue dist\/libs\/auth\/src\/tokens\/token.service.js:168: 1 samples, 50.0%<\/title><rect [^>]* fill="hsl\(28,/);

    // perf writes the kernel's library in brackets already: the frame's label does not bracket it twice.
    expect(perfStacks('node  8251 \n\t    ffffffff8e2 do_syscall_64 ([kernel.kallsyms])\n')).toEqual([['thread 8251 node', 'do_syscall_64 [kernel.kallsyms]']]);
  });

  it('names the package of a frame: a dependency, a library of the platform, a module of Node; none for native code', () => {
    expect(packageOf('query ~/pg/lib/client.js:10')).toBe('pg');
    expect(packageOf('(anonymous) ~/@nestjs/core/router/router-execution-context.js:279')).toBe('@nestjs/core');
    expect(packageOf('handle dist/libs/auth/src/token.js:10')).toBe('libs/auth');
    expect(packageOf('bootstrap dist/apps/api/src/main.js:3')).toBe('apps/api');
    expect(packageOf('clearBuffer node:internal/streams/writable:744')).toBe('node:internal/streams/writable');
    // A dependency's own dist/ folder is the dependency's, not the platform's build.
    expect(shortUrl('file:///srv/app/node_modules/pg-protocol/dist/parser.js')).toBe('~/pg-protocol/dist/parser.js');
    expect(packageOf(`parse ${shortUrl('/srv/app/node_modules/pg-protocol/dist/parser.js')}:26`)).toBe('pg-protocol');
    expect(shortUrl('file:///srv/app/dist/libs/auth/src/token.js')).toBe('dist/libs/auth/src/token.js');
    expect(packageOf('up dist/migrations/1700000000000-init.js:3')).toBe('migrations');
    expect(packageOf('writev')).toBeUndefined();
    expect(packageOf('malloc [libc.so.6]')).toBeUndefined();
  });

  it('counts each sample to the innermost frame with a package, native work to its JavaScript caller', () => {
    const counts = samplesByPackage([
      ...samplesInWindow(profile, {}).stacks,
      ['uv_run [node]', 'do_syscall_64 [kernel.kallsyms]'],
      ['start_thread [libc.so.6]', '[unknown] [libsofthsm2.so]'],
    ]);
    expect(Object.fromEntries(counts)).toEqual({
      pg: 3,
      // writev has no package: the handler that called it has.
      'libs/auth': 1,
      'native: (garbage collector)': 1,
      'native: kernel.kallsyms': 1,
      'native: libsofthsm2.so': 1,
    });
    const table = summarise({ title: 'token', stacks: samplesInWindow(profile, {}).stacks }, { top: 2, byPackage: true });
    expect(table).toBe('token\n5 samples\nby package:\n   60.0%  pg\n   20.0%  libs/auth\n');
  });
});
