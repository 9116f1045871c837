#!/usr/bin/env node
'use strict';
// Draws a CPU profile as a flame graph in SVG: each box a function in its call path, as wide as the
// share of the samples spent in it and its callees, its callers below it. Boxes narrower than
// --min-width pixels (0.5) are left out. Hovering a box shows its name, file and share. Colours say
// whose code it is: the platform's own (dist/), a dependency's (~/), Node's (node:), and native
// frames (V8, libuv, OpenSSL, the C library, the kernel's system calls, SoftHSM2).
//
// Two kinds of profile:
// - V8's (.cpuprofile, from the service run with BENCH_SERVICE_NODE_ARGS="--cpu-prof
//   --cpu-prof-dir=DIR"), one thread, over the same window as ops/bench/profile-summary.js
//   (ops/bench/cpuprofile.js). V8 samples by the clock: a thread that the kernel sets aside inside a
//   system call (a socket write that wakes the reader) is counted there as if it ran.
// - Linux perf's (--perf FILE: the text of `perf script -F comm,tid,ip,sym,dso` of a `perf record
//   -e cpu-clock -g` of the service started with BENCH_SERVICE_NODE_ARGS=--perf-basic-prof-only-functions),
//   which samples only what runs on a CPU, every thread and the kernel's part included; --thread
//   TID keeps one thread.
//   node ops/bench/flamegraph.js FILE.cpuprofile [--last 10] [--skip-end 1] [--title TEXT] [--min-width PX] > graph.svg
//   node ops/bench/flamegraph.js --perf perf-script.txt [--thread TID] [--title TEXT] > graph.svg
const { readFileSync } = require('node:fs');
const { packageOf, parseWindowArgs, readProfile, samplesInWindow, shortUrl } = require('./cpuprofile');

const WIDTH = 1200;
const MARGIN = 10;
const FRAME_HEIGHT = 16;
const HEADER = 44;
const FONT_SIZE = 11;
/** About the width of a character of the label font at FONT_SIZE, to cut labels to their box. */
const CHAR_WIDTH = 6.2;

/** The stacks merged into one call tree: { name, count, children: Map<name, node> }. */
function callTree(stacks) {
  const root = { name: 'all', count: 0, children: new Map() };
  for (const stack of stacks) {
    root.count++;
    let node = root;
    for (const name of stack) {
      let child = node.children.get(name);
      if (child === undefined) node.children.set(name, (child = { name, count: 0, children: new Map() }));
      child.count++;
      node = child;
    }
  }
  return root;
}

/** Whose code a frame is, by its package (ops/bench/cpuprofile.js `packageOf`): the platform's, a dependency's, Node's, or native. */
function owner(name) {
  const owningPackage = packageOf(name);
  if (owningPackage === undefined) return 'native';
  if (owningPackage.startsWith('node:')) return 'node';
  return name.includes(' ~/') ? 'dependency' : 'platform';
}

const HUES = { platform: 28, dependency: 50, node: 205, native: 0 };

function colour(name) {
  let hash = 0;
  for (let i = 0; i < name.length; i++) hash = (hash * 31 + name.charCodeAt(i)) >>> 0;
  const kind = owner(name);
  const saturation = kind === 'native' ? 0 : 75;
  return `hsl(${HUES[kind]}, ${saturation}%, ${62 + (hash % 20)}%)`;
}

const escapeXml = (text) => text.replace(/[<>&"']/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c]);

/** How many rows of boxes at least `minCount` samples wide stand on `node`. */
function depthOf(node, minCount) {
  let deepest = 0;
  for (const child of node.children.values()) if (child.count >= minCount) deepest = Math.max(deepest, 1 + depthOf(child, minCount));
  return deepest;
}

/** The SVG text of the flame graph of `stacks` (arrays of frame names, outermost first). */
function flameGraph(stacks, { title, minWidth = 0.5, subtitle = '' }) {
  const root = callTree(stacks);
  const scale = (WIDTH - 2 * MARGIN) / Math.max(root.count, 1);
  const height = HEADER + (depthOf(root, minWidth / scale) + 1) * FRAME_HEIGHT + MARGIN;
  const boxes = [];
  const draw = (node, depth, x) => {
    const width = node.count * scale;
    if (width < minWidth) return;
    const y = height - MARGIN - (depth + 1) * FRAME_HEIGHT;
    const share = ((100 * node.count) / Math.max(root.count, 1)).toFixed(1);
    const room = Math.floor((width - 6) / CHAR_WIDTH);
    const text = room < 3 ? '' : node.name.length <= room ? node.name : `${node.name.slice(0, room - 2)}..`;
    boxes.push(
      `<g><title>${escapeXml(`${node.name}: ${node.count} samples, ${share}%`)}</title>` +
        `<rect x="${x.toFixed(1)}" y="${y}" width="${width.toFixed(1)}" height="${FRAME_HEIGHT - 1}" rx="2" fill="${colour(node.name)}"/>` +
        (text ? `<text x="${(x + 3).toFixed(1)}" y="${y + FRAME_HEIGHT - 4}">${escapeXml(text)}</text>` : '') +
        '</g>',
    );
    let offset = x;
    // Alphabetical, as flame graphs go: the x axis is not time, and equal calls line up between graphs.
    for (const child of [...node.children.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      draw(child, depth + 1, offset);
      offset += child.count * scale;
    }
  };
  draw(root, 0, MARGIN);
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" role="img" aria-label="${escapeXml(title)}">`,
    `<style>text { font: ${FONT_SIZE}px monospace; fill: #111; pointer-events: none; } rect:hover { stroke: #000; stroke-width: 1; }</style>`,
    `<rect width="100%" height="100%" fill="#fafafa"/>`,
    `<text x="${MARGIN}" y="18" style="font-size: 14px; font-weight: bold">${escapeXml(title)}</text>`,
    `<text x="${MARGIN}" y="34">${escapeXml(subtitle)}</text>`,
    ...boxes,
    '</svg>',
    '',
  ].join('\n');
}

/**
 * A frame of `perf script` as ops/bench/cpuprofile.js labels V8's: JavaScript from perf's map
 * ("JS:*issue /srv/dist/libs/x.js:168:18") as "issue dist/libs/x.js:168", native code as its
 * symbol and library.
 */
function perfLabel(symbol, library) {
  const js = /^JS:[*~^]?(\S*)\s+(.*?)(?::\d+)?$/.exec(symbol);
  if (js) {
    return `${js[1] || '(anonymous)'} ${shortUrl(js[2])}`.trim();
  }
  const name = symbol.replace(/\+0x[0-9a-f]+$/, '') || '[unknown]';
  // perf writes the kernel's "library" in brackets already ([kernel.kallsyms]).
  return `${name} [${library.replace(/^.*\//, '').replace(/^\[(.*)\]$/, '$1')}]`;
}

/**
 * The stacks of `perf script` text, outermost frame first; `thread`: only that thread id's, else
 * each stack stands on a frame naming its thread ("thread 8222 node").
 */
function perfStacks(text, thread) {
  const stacks = [];
  for (const sample of text.split(/\n\s*\n/)) {
    const [header, ...frames] = sample.split('\n').filter((line) => line.trim() !== '');
    if (header === undefined) continue;
    const [command, id] = header.trim().split(/\s+/);
    if (thread !== undefined && id !== String(thread)) continue;
    const stack = [];
    for (const line of frames) {
      const frame = /^\s+[0-9a-f]+\s+(.*?)\s+\((.*)\)$/.exec(line);
      // A frame perf knows neither the symbol nor the library of is an unwinding through code without
      // frame pointers (SoftHSM2's): chains of a hundred of them, which say nothing.
      if (frame && !(frame[2] === '[unknown]' && /^\[unknown\]/.test(frame[1]))) stack.push(perfLabel(frame[1], frame[2]));
    }
    if (stack.length === 0) continue;
    stack.reverse();
    stacks.push(thread === undefined ? [`thread ${id} ${command}`, ...stack] : stack);
  }
  return stacks;
}

module.exports = { callTree, flameGraph, perfStacks };

if (require.main === module) {
  const { files, window, rest } = parseWindowArgs(process.argv.slice(2), ['--title', '--min-width', '--perf', '--thread']);
  if (files.length !== (rest.perf === undefined ? 1 : 0)) {
    process.stderr.write(
      'usage: flamegraph.js FILE.cpuprofile [--last S] [--skip-end S] [--from S --to S] [--title TEXT] [--min-width PX] > graph.svg\n' +
        '       flamegraph.js --perf PERF-SCRIPT.txt [--thread TID] [--title TEXT] [--min-width PX] > graph.svg\n',
    );
    process.exit(2);
  }
  const colours = 'orange: the platform, yellow: dependencies, blue: Node, grey: native';
  let stacks;
  let subtitle;
  if (rest.perf !== undefined) {
    stacks = perfStacks(readFileSync(rest.perf, 'utf8'), rest.thread);
    subtitle = `${stacks.length} samples of CPU time (perf, cpu-clock)${rest.thread ? `, thread ${rest.thread}` : ''}; ${colours}; width: share of the samples`;
  } else {
    const sampled = samplesInWindow(readProfile(files[0]), window);
    stacks = sampled.stacks;
    const { start, stop, all } = sampled;
    subtitle =
      `${stacks.length} busy samples of ${all} (${((100 * stacks.length) / Math.max(all, 1)).toFixed(0)}%), ${start.toFixed(1)}-${stop.toFixed(1)} s; ` +
      `${colours}; width: share of the busy samples`;
  }
  process.stdout.write(flameGraph(stacks, { title: rest.title ?? files[0] ?? rest.perf, subtitle, minWidth: Number(rest['min-width'] ?? 0.5) }));
}
