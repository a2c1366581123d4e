// No module of src/ reaches itself through its imports (docs/architecture.md#no-import-cycles): static,
// type-only, re-exports and dynamic `import()` alike. A cycle makes load order matter and hides which of two
// files owns an idea; the fix is to move what both need into a third file. The walk reads the import
// specifiers of every .ts file (relative ones: the rest are packages) and finds the strongly connected
// components of the graph (Tarjan); every component of more than one file, or a file importing itself, fails.
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const ROOT = join(import.meta.dir, "../..");
const SRC = join(ROOT, "src");

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) sourceFiles(path, out);
    else if (/\.tsx?$/.test(entry) && !entry.endsWith(".d.ts")) out.push(path);
  }
  return out;
}

/**
 * A statement at the start of a line: `import … from "x"` and `export … from "x"` (type-only too, over any number of
 * lines), `import "x"`; and `import("x")` anywhere. Statements only at a line's start, so that an example in a
 * comment is not an import (a comment's lines start with `//` or ` *`).
 */
const SPECIFIER = /^(?:import|export)\s[^;]*?\bfrom\s*["']([^"']+)["']|^import\s*["']([^"']+)["']|\bimport\s*\(\s*["']([^"']+)["']\s*\)/gm;

/** The src/ files `file` imports (relative specifiers: the rest are packages). */
export function importsOf(file: string): string[] {
  const text = readFileSync(file, "utf8");
  const out: string[] = [];
  for (const m of text.matchAll(SPECIFIER)) {
    const spec = m[1] ?? m[2] ?? m[3]!;
    if (!spec.startsWith(".")) continue;
    const base = resolve(dirname(file), spec);
    const found = [base, `${base}.ts`, `${base}.tsx`, join(base, "index.ts")].find((p) => existsSync(p) && statSync(p).isFile());
    if (found !== undefined) out.push(found);
  }
  return out;
}

/** The graph's cycles: every strongly connected component of more than one file, or with a self-import. */
export function cyclesOf(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || (graph.get(v) ?? []).includes(v)) cycles.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return cycles;
}

describe("import cycles in src/", () => {
  test("the walk sees type-only imports, and finds a cycle", () => {
    const a = join(SRC, "gateway/stage.ts");
    expect(importsOf(a).map((f) => relative(SRC, f))).toContain("gateway/reply.ts"); // `import type { Reply }`
    expect(cyclesOf(new Map([["a", ["b"]], ["b", ["c"]], ["c", ["a"]], ["d", ["a"]]]))).toEqual([["a", "b", "c"]]);
    expect(cyclesOf(new Map([["a", ["a"]]]))).toEqual([["a"]]);
    expect(cyclesOf(new Map([["a", ["b"]], ["b", []]]))).toEqual([]);
  });

  test("no module reaches itself", () => {
    const graph = new Map(sourceFiles(SRC).map((f) => [f, importsOf(f)]));
    const cycles = cyclesOf(graph).map((c) => c.map((f) => relative(ROOT, f)).join(" ↔ "));
    expect(cycles).toEqual([]);
  });
});
