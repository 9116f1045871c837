import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

/**
 * No source file in apps/ or libs/ reaches itself through its imports (type-only imports and
 * re-exports count too): a circle makes load order decide whether a value is defined yet, and
 * makes two files one concern in two places (docs/decisions.md, "No import circles").
 */

const ROOT = join(__dirname, '..');

const config = ts.readConfigFile(join(ROOT, 'tsconfig.json'), (path) => ts.sys.readFile(path));
const { options } = ts.parseJsonConfigFileContent(config.config, ts.sys, ROOT);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** The project files a file imports or re-exports, resolved as the compiler does (paths included). */
function importsOf(file: string): string[] {
  const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, false);
  return importedFiles.flatMap(({ fileName }) => {
    const resolved = ts.resolveModuleName(fileName, file, options, ts.sys).resolvedModule;
    if (!resolved || resolved.isExternalLibraryImport || resolved.extension === ts.Extension.Dts) return [];
    return [resolved.resolvedFileName];
  });
}

/** Every circle in the graph, each as the files it passes through (one per strongly connected component). */
function circles(graph: Map<string, string[]>): string[][] {
  // Tarjan's strongly connected components; a component of two or more files, or a file importing
  // itself, is a circle.
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (file: string): void => {
    index.set(file, next);
    low.set(file, next);
    next += 1;
    stack.push(file);
    onStack.add(file);
    for (const target of graph.get(file) ?? []) {
      if (!index.has(target)) {
        visit(target);
        low.set(file, Math.min(low.get(file)!, low.get(target)!));
      } else if (onStack.has(target)) {
        low.set(file, Math.min(low.get(file)!, index.get(target)!));
      }
    }
    if (low.get(file) === index.get(file)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== file);
      if (component.length > 1 || (graph.get(file) ?? []).includes(file)) found.push(component.sort());
    }
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return found;
}

describe('import circles', () => {
  const files = [...sourceFiles(join(ROOT, 'apps')), ...sourceFiles(join(ROOT, 'libs'))];
  const graph = new Map(files.map((file) => [file, importsOf(file)]));

  it('the graph is the project (the check below has something to check)', () => {
    expect(files.length).toBeGreaterThan(200);
    const edges = [...graph.values()].reduce((n, targets) => n + targets.length, 0);
    expect(edges).toBeGreaterThan(files.length);
    // Path aliases resolve: the accounts service reaches the common library through its barrel.
    expect(graph.get(join(ROOT, 'libs/accounts/src/users/user.service.ts'))).toContain(join(ROOT, 'libs/common/src/index.ts'));
  });

  it('finds a circle when there is one', () => {
    const a = join(ROOT, 'a.ts');
    const b = join(ROOT, 'b.ts');
    const c = join(ROOT, 'c.ts');
    expect(
      circles(
        new Map([
          [a, [b]],
          [b, [c]],
          [c, [a]],
        ]),
      ),
    ).toEqual([[a, b, c]]);
    expect(circles(new Map([[a, [a]]]))).toEqual([[a]]);
    expect(
      circles(
        new Map([
          [a, [b]],
          [b, []],
        ]),
      ),
    ).toEqual([]);
  });

  it('no file in apps/ or libs/ imports itself through others', () => {
    expect(circles(graph).map((component) => component.map((file) => relative(ROOT, file)))).toEqual([]);
  });
});
