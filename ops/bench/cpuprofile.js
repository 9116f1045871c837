'use strict';
// Reading a V8 CPU profile (.cpuprofile, from the service run with
// BENCH_SERVICE_NODE_ARGS="--cpu-prof --cpu-prof-dir=DIR") over a window of it, for
// ops/bench/profile-summary.js (tables) and ops/bench/flamegraph.js (an SVG flame graph).
// The window: all of it by default; --from/--to in seconds from the profile's start, or --last N,
// the last N seconds before the profile's end (the service's stop), less --skip-end S.
const { readFileSync } = require('node:fs');

/** Frames that are not work: the idle loop and the tree's root. `(program)` (V8's own, unattributed) is work. */
const NOT_WORK = new Set(['(idle)', '(root)']);

/** Reads the window options off `argv`; answers { files, window, rest: { [option]: value } } for the options in `extra`. */
function parseWindowArgs(argv, extra = []) {
  const window = { skipEnd: 0 };
  const rest = {};
  const files = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--last') window.last = Number(argv[++i]);
    else if (arg === '--skip-end') window.skipEnd = Number(argv[++i]);
    else if (arg === '--from') window.from = Number(argv[++i]);
    else if (arg === '--to') window.to = Number(argv[++i]);
    else if (extra.includes(arg)) rest[arg.slice(2)] = argv[++i];
    else files.push(arg);
  }
  return { files, window, rest };
}

/**
 * A script's address as the tools print it: a dependency's under ~/ (its own dist/ or build/ folder
 * kept: pg-protocol's parser is ~/pg-protocol/dist/parser.js, not the platform's dist/), the
 * build's under dist/.
 */
function shortUrl(url) {
  const path = url.replace(/^file:\/\//, '');
  const dependency = /^.*\/node_modules\/(.*)$/.exec(path);
  return dependency ? `~/${dependency[1]}` : path.replace(/^.*\/dist\//, 'dist/');
}

/** A frame's name as the tools print it: the function, then its file (shortUrl) and line. */
function label(node) {
  const { functionName, url, lineNumber } = node.callFrame;
  return `${functionName || '(anonymous)'} ${url ? `${shortUrl(url)}:${lineNumber + 1}` : ''}`.trim();
}

/**
 * The samples of `profile` in the window, each as its stack of frame names from the outermost
 * (below the root) to the frame that was running: { start, stop, all, stacks }, `all` counting
 * the idle samples too, `stacks` only those that were work.
 */
function samplesInWindow(profile, { last, skipEnd = 0, from, to }) {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const times = [];
  let t = 0;
  for (const delta of profile.timeDeltas) times.push((t += delta) / 1e6);
  const end = times[times.length - 1] - skipEnd;
  const start = last !== undefined ? end - last : (from ?? 0);
  const stop = to ?? end;
  const stackOf = new Map();
  const stacks = [];
  let all = 0;
  profile.samples.forEach((id, index) => {
    if (times[index] < start || times[index] > stop) return;
    all++;
    if (NOT_WORK.has(byId.get(id).callFrame.functionName)) return;
    let stack = stackOf.get(id);
    if (stack === undefined) {
      stack = [];
      for (let at = id; at !== undefined && byId.get(at).callFrame.functionName !== '(root)'; at = parent.get(at)) stack.push(label(byId.get(at)));
      stack.reverse();
      stackOf.set(id, stack);
    }
    stacks.push(stack);
  });
  return { start, stop, all, stacks };
}

/**
 * The package a frame's code belongs to, by its label (`label` above, or flamegraph.js `perfLabel`):
 * a dependency (`pg`, `@nestjs/core`), a library or application of the platform (`libs/auth`), or
 * a module of Node's own (`node:internal/streams/writable`); undefined for native code. The one
 * rule for whose code a frame is: flamegraph.js colours by it too.
 */
function packageOf(frameLabel) {
  const dependency = / ~\/((?:@[^/]+\/)?[^/]+)\//.exec(frameLabel);
  if (dependency) return dependency[1];
  // A library or application of the platform by its folder (libs/auth), anything else built by its own (migrations).
  const platform = / dist\/((?:libs|apps)\/[^/]+|[^/]+)\//.exec(frameLabel);
  if (platform) return platform[1];
  const node = / (node:[^:\s]+)/.exec(frameLabel);
  return node ? node[1] : undefined;
}

/**
 * Samples per package (packageOf): each sample goes to the innermost frame of its stack that has
 * one, so that native work (a system call, an allocation, a builtin) counts to the JavaScript that
 * asked for it; a stack with no JavaScript at all counts as `native: ` its innermost frame's library
 * (perf's `[node]`, `[libc.so.6]`) or name (V8's `(garbage collector)`, `(program)`).
 */
function samplesByPackage(stacks) {
  const counts = new Map();
  for (const stack of stacks) {
    let owner;
    for (let at = stack.length - 1; at >= 0 && owner === undefined; at--) owner = packageOf(stack[at]);
    if (owner === undefined) {
      const innermost = stack[stack.length - 1] ?? '';
      owner = `native: ${/\[([^\]]+)\]$/.exec(innermost)?.[1] ?? innermost}`;
    }
    counts.set(owner, (counts.get(owner) ?? 0) + 1);
  }
  return counts;
}

const readProfile = (file) => JSON.parse(readFileSync(file, 'utf8'));

module.exports = { parseWindowArgs, label, shortUrl, samplesInWindow, readProfile, packageOf, samplesByPackage };
