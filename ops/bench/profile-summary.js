#!/usr/bin/env node
'use strict';
// Summarises a V8 CPU profile (.cpuprofile, from the service run with
// BENCH_SERVICE_NODE_ARGS="--cpu-prof --cpu-prof-dir=DIR") as text: the functions with the most
// self time and the most total time (self + callees), as shares of the busy samples, over a window
// of the profile (by default all of it; --from/--to in seconds from the profile's start, or --last
// N: the last N seconds before the profile's end, which is the service's stop).
//   node ops/bench/profile-summary.js FILE.cpuprofile [--last 10] [--skip-end 1] [--top 25]
const { readFileSync } = require('node:fs');

function parseArgs(argv) {
  const options = { top: 25, skipEnd: 0 };
  const files = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--top') options.top = Number(argv[++i]);
    else if (arg === '--last') options.last = Number(argv[++i]);
    else if (arg === '--skip-end') options.skipEnd = Number(argv[++i]);
    else if (arg === '--from') options.from = Number(argv[++i]);
    else if (arg === '--to') options.to = Number(argv[++i]);
    else files.push(arg);
  }
  if (files.length !== 1) throw new Error('usage: profile-summary.js FILE.cpuprofile [--last S] [--skip-end S] [--from S --to S] [--top N]');
  return { file: files[0], ...options };
}

const IDLE = new Set(['(idle)', '(program)', '(root)']);

function label(node) {
  const { functionName, url, lineNumber } = node.callFrame;
  const where = url
    ? `${url
        .replace(/^file:\/\//, '')
        .replace(/^.*\/node_modules\//, '~/')
        .replace(/^.*\/dist\//, 'dist/')}:${lineNumber + 1}`
    : '';
  return `${functionName || '(anonymous)'} ${where}`.trim();
}

function summarise({ file, top, last, skipEnd, from, to }) {
  const profile = JSON.parse(readFileSync(file, 'utf8'));
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  // Sample times in seconds from the start.
  const times = [];
  let t = 0;
  for (const delta of profile.timeDeltas) times.push((t += delta) / 1e6);
  const end = times[times.length - 1] - skipEnd;
  const start = last !== undefined ? end - last : (from ?? 0);
  const stop = to ?? end;
  const self = new Map();
  const total = new Map();
  let busy = 0;
  let all = 0;
  profile.samples.forEach((id, index) => {
    if (times[index] < start || times[index] > stop) return;
    all++;
    const node = byId.get(id);
    if (IDLE.has(node.callFrame.functionName) && node.callFrame.functionName !== '(program)') return;
    busy++;
    const name = label(node);
    self.set(name, (self.get(name) ?? 0) + 1);
    const seen = new Set();
    for (let at = id; at !== undefined; at = parent.get(at)) {
      const frame = byId.get(at);
      if (frame.callFrame.functionName === '(root)') break;
      const frameName = label(frame);
      if (seen.has(frameName)) continue;
      seen.add(frameName);
      total.set(frameName, (total.get(frameName) ?? 0) + 1);
    }
  });
  const pct = (count) => `${((100 * count) / Math.max(busy, 1)).toFixed(1).padStart(5)}%`;
  const rows = (map) =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, count]) => `  ${pct(count)}  ${name}`)
      .join('\n');
  process.stdout.write(
    `${file}\nwindow ${start.toFixed(1)}-${stop.toFixed(1)} s: ${all} samples, ${busy} busy (${((100 * busy) / Math.max(all, 1)).toFixed(0)}%)\n` +
      `self time:\n${rows(self)}\ntotal time (self + callees):\n${rows(total)}\n`,
  );
}

summarise(parseArgs(process.argv.slice(2)));
