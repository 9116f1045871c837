import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

/**
 * The repository stands alone: whoever clones it has the contract in docs/contract/, and every
 * reference in code, docs and scripts resolves inside the repository. Fails on a path that leads
 * outside the repository, a Markdown link to a file that does not exist, and a citation of the
 * contract (DECISIONS 5.2, interface, Authentication 12, CREDENTIAL-MANAGEMENT.md, "PKI") that names
 * no section there.
 */

const ROOT = resolve(__dirname, '..');
const CONTRACT = join(ROOT, 'docs', 'contract');
const SKIPPED_DIRECTORIES = new Set(['node_modules', 'dist', '.data', '.test-run', 'coverage', '.git']);
const CHECKED_FILE = /\.(ts|js|mjs|cjs|md|json|ya?ml|properties|sh)$|^Dockerfile$|^run$/;

export interface Finding {
  file: string;
  line: number;
  problem: string;
}

interface Heading {
  level: number;
  text: string;
  /** Lines from the heading to the next heading of the same or a higher level. */
  body: string;
}

function headingsOf(markdown: string): Heading[] {
  const lines = markdown.split('\n');
  const headings: Heading[] = [];
  lines.forEach((line, index) => {
    const match = /^(#{1,6})\s+(.*)$/.exec(line);
    if (!match) return;
    const level = match[1].length;
    let end = lines.length;
    for (let next = index + 1; next < lines.length; next++) {
      const other = /^(#{1,6})\s/.exec(lines[next]);
      if (other && other[1].length <= level) {
        end = next;
        break;
      }
    }
    headings.push({ level, text: match[2].trim(), body: lines.slice(index + 1, end).join('\n') });
  });
  return headings;
}

export interface Contract {
  decisions: Heading[];
  interface: Heading[];
  credentialManagement: Heading[];
}

export function loadContract(directory = CONTRACT): Contract {
  const read = (name: string) => headingsOf(readFileSync(join(directory, name), 'utf8'));
  return { decisions: read('DECISIONS.md'), interface: read('interface.md'), credentialManagement: read('CREDENTIAL-MANAGEMENT.md') };
}

/** Lower case, without quotes, and with a citation that a comment wrapped onto two lines joined again. */
const normalise = (text: string) =>
  text
    .toLowerCase()
    .replace(/\s*\n\s*(?:\*|\/\/|#)?\s*/g, ' ')
    .replace(/[`"]/g, '');

/** Every problem of one file's text; `file` is its path relative to the repository root. */
export function checkText(file: string, text: string, contract: Contract, root = ROOT): Finding[] {
  const findings: Finding[] = [];
  const lineOf = (index: number) => text.slice(0, index).split('\n').length;
  const add = (index: number, problem: string) => findings.push({ file, line: lineOf(index), problem });

  // A path into a sibling of the checkout, or an absolute path of one machine.
  for (const match of text.matchAll(/(?:\.\.\/)+shared\/|\/work\/[\w.-]+\//g)) {
    add(match.index, `"${match[0]}" points outside the repository; cite docs/contract/ instead`);
  }

  if (file.endsWith('.md')) {
    for (const match of text.matchAll(/\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      const target = match[1];
      if (/^(https?:|mailto:|#)/.test(target)) continue;
      const path = resolve(root, dirname(file), decodeURIComponent(target.split('#')[0]));
      if (path !== root && !path.startsWith(root + sep)) add(match.index, `link "${target}" leaves the repository`);
      else if (!existsSync(path)) add(match.index, `link "${target}" names a file that does not exist`);
    }
  }

  for (const match of text.matchAll(/\bDECISIONS(?:\.md)?,? (?:section )?(\d+)(?:\.(\d+))?/g)) {
    const wanted = match[2] ? `${match[1]}.${match[2]}` : `${match[1]}.`;
    const found = contract.decisions.some((h) => h.text.startsWith(`${wanted} `) || h.text === wanted);
    if (!found) add(match.index, `"${match[0]}" names no section of docs/contract/DECISIONS.md`);
  }

  for (const match of text.matchAll(/\binterface(?:\.md)?, (?:"([^"]+)"|([A-Z][a-z]+)(?: (?:rule )?(\d+))?)/g)) {
    const [, quoted, word, item] = match;
    const name = normalise(quoted ?? word);
    const section = contract.interface.find((h) => (quoted ? normalise(h.text).includes(name) : normalise(h.text).startsWith(name)));
    if (!section) add(match.index, `"${match[0]}" names no section of docs/contract/interface.md`);
    else if (item && !new RegExp(`^${item}\\. `, 'm').test(section.body)) add(match.index, `"${match[0]}": section "${section.text}" has no item ${item}`);
  }

  for (const match of text.matchAll(/\bCREDENTIAL-MANAGEMENT(?:\.md)?,? (?:section )?"([^"]+)"/g)) {
    const name = normalise(match[1]);
    if (!contract.credentialManagement.some((h) => normalise(h.text).includes(name))) {
      add(match.index, `"${match[0]}" names no section of docs/contract/CREDENTIAL-MANAGEMENT.md`);
    }
  }
  return findings;
}

/** Every checked file, except this one: its own examples of broken references are meant to be broken. */
function* repositoryFiles(directory = ROOT): Generator<string> {
  for (const entry of readdirSync(directory)) {
    const path = join(directory, entry);
    if (statSync(path).isDirectory()) {
      if (!SKIPPED_DIRECTORIES.has(entry)) yield* repositoryFiles(path);
    } else if (CHECKED_FILE.test(entry) && entry !== 'package-lock.json' && path !== __filename) {
      yield path;
    }
  }
}

describe('the repository stands alone: every reference resolves inside it', () => {
  const contract = loadContract();

  it('has the contract the code cites, with its sections', () => {
    expect(contract.decisions.map((h) => h.text)).toEqual(
      expect.arrayContaining(['5.2 Scope to permission matrix (DM = Device Management, HD = Help Desk, CO = Configuration Operator, DV = Device)']),
    );
    expect(contract.interface.map((h) => h.text)).toContain('Authentication');
    expect(contract.credentialManagement.some((h) => h.text.startsWith('PKI'))).toBe(true);
  });

  it('finds no broken reference in code, docs and scripts', () => {
    const findings: Finding[] = [];
    let checked = 0;
    for (const path of repositoryFiles()) {
      checked++;
      findings.push(...checkText(relative(ROOT, path), readFileSync(path, 'utf8'), contract));
    }
    expect(checked).toBeGreaterThan(100);
    expect(findings.map((f) => `${f.file}:${f.line}: ${f.problem}`)).toEqual([]);
  });

  describe('the checker itself', () => {
    const check = (text: string, file = 'libs/example.ts') => checkText(file, text, contract).map((f) => f.problem);

    it('accepts citations of sections that exist', () => {
      expect(check('see DECISIONS 5.2, DECISIONS 11 and DECISIONS.md section 3.4')).toEqual([]);
      expect(check('(interface, Authentication 12; interface, "Create a device"; interface, Endpoints rule 4)')).toEqual([]);
      expect(check('CREDENTIAL-MANAGEMENT.md, "PKI" and CREDENTIAL-MANAGEMENT.md section "SyncSession"')).toEqual([]);
      expect(check('[the contract](docs/contract/DECISIONS.md) and [a heading](README.md#configuration)', 'README.md')).toEqual([]);
    });

    it('refuses paths outside the repository and links that do not resolve', () => {
      expect(check('read ../shared/spec/interface.md')).toEqual([expect.stringContaining('outside the repository')]);
      expect(check('[x](../../elsewhere.md)', 'docs/a.md')).toEqual([expect.stringContaining('leaves the repository')]);
      expect(check('[x](missing.md)', 'docs/a.md')).toEqual([expect.stringContaining('does not exist')]);
    });

    it('refuses citations of sections that do not exist', () => {
      expect(check('DECISIONS 5.9')).toEqual([expect.stringContaining('no section of docs/contract/DECISIONS.md')]);
      expect(check('DECISIONS 99')).toEqual([expect.stringContaining('no section')]);
      expect(check('interface, Authentication 40')).toEqual([expect.stringContaining('has no item 40')]);
      expect(check('interface, "Teleportation"')).toEqual([expect.stringContaining('no section of docs/contract/interface.md')]);
      expect(check('CREDENTIAL-MANAGEMENT.md, "Billing"')).toEqual([expect.stringContaining('no section')]);
    });
  });
});
