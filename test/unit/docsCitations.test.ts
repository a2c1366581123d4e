// The repository describes itself: code, tests and benchmarks cite docs/<page>.md#<heading> and nothing
// outside the repository (no `CONTRACT` and no bare `§` section numbers; `RFC 9110 §5.5` is a standard, and
// fine), every citation names a page that exists and a heading it has, and the docs' own links resolve.
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { slug } from "../../scripts/gen-api-reference.ts";

const ROOT = join(import.meta.dir, "../..");
/** Files that spell the forbidden forms to forbid them. */
const EXEMPT = new Set(["test/unit/readme.test.ts", "test/unit/docsCitations.test.ts"]);

/** The text files of src/, cli/, test/ and bench/: everything that may cite docs/. */
function scannedFiles(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir)) {
      if (entry === "node_modules" || entry.startsWith(".")) continue;
      const path = join(dir, entry);
      if (statSync(path).isDirectory()) walk(path);
      else if (/\.(ts|tsx|js|mjs|cjs|md|sh|css|html)$/.test(entry)) out.push(path);
    }
  };
  for (const dir of ["src", "cli", "test", "bench"]) walk(join(ROOT, dir));
  return out.filter((f) => !EXEMPT.has(relative(ROOT, f)));
}

const DOCS = join(ROOT, "docs");

/** The anchors of a Markdown page as GitHub makes them: one per heading, duplicates numbered. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of markdown.split("\n")) {
    if (line.startsWith("```")) fenced = !fenced;
    const m = fenced ? null : /^#{1,6} (.+)$/.exec(line);
    if (!m) continue;
    const base = slug(m[1]!.replace(/`/g, ""));
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

const pages = new Map<string, Set<string>>();
for (const file of readdirSync(DOCS)) if (file.endsWith(".md")) pages.set(file, anchorsOf(readFileSync(join(DOCS, file), "utf8")));

/** Why a citation `page#anchor` of docs/ does not resolve, or null. */
function brokenCitation(page: string, anchor: string | undefined): string | null {
  const anchors = pages.get(page);
  if (!anchors) return `docs/${page} does not exist`;
  if (anchor !== undefined && !anchors.has(anchor)) return `docs/${page} has no heading #${anchor}`;
  return null;
}

const files = scannedFiles().map((f) => ({ path: relative(ROOT, f), text: readFileSync(f, "utf8") }));

describe("citations in src/, cli/, test/ and bench/", () => {
  test("the scan covers the tree", () => {
    expect(files.length).toBeGreaterThan(300);
    expect(files.some((f) => f.path === "src/gateway/pipeline.ts")).toBe(true);
    expect(files.some((f) => f.path === "bench/README.md")).toBe(true);
  });

  test("no file cites the external specification: no CONTRACT, no bare § section number", () => {
    const offenders: string[] = [];
    for (const { path, text } of files) {
      text.split("\n").forEach((line, i) => {
        if (/CONTRACT/.test(line) || /(?<!RFC \d+ )§\s*\d/.test(line)) offenders.push(`${path}:${i + 1}: ${line.trim()}`);
      });
    }
    expect(offenders).toEqual([]);
  });

  test("every docs/<page>.md#<heading> cited exists", () => {
    const broken: string[] = [];
    let cited = 0;
    for (const { path, text } of files) {
      for (const m of text.matchAll(/docs\/([\w-]+\.md)(?:#([\w-]+))?/g)) {
        cited++;
        const why = brokenCitation(m[1]!, m[2]);
        if (why) broken.push(`${path}: ${m[0]} (${why})`);
      }
    }
    expect(cited).toBeGreaterThan(400);
    expect(broken).toEqual([]);
  });
});

describe("links in docs/ and README.md", () => {
  test("every relative link names a file that exists and, in docs/, a heading it has", () => {
    const broken: string[] = [];
    const sources = [...[...pages.keys()].map((p) => join(DOCS, p)), join(ROOT, "README.md")];
    for (const source of sources) {
      const dir = source.startsWith(DOCS) ? DOCS : ROOT;
      const text = readFileSync(source, "utf8").replace(/```[\s\S]*?```/g, "");
      for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1]!;
        if (/^[a-z]+:/.test(target)) continue;
        const [file, anchor] = target.split("#") as [string, string | undefined];
        const resolved = file === "" ? source : join(dir, file);
        const where = `${relative(ROOT, source)} → ${target}`;
        if (!existsSync(resolved)) broken.push(`${where} (no such file)`);
        else if (anchor !== undefined && resolved.startsWith(DOCS)) {
          const why = brokenCitation(relative(DOCS, resolved), anchor);
          if (why) broken.push(`${where} (${why})`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  test("every repository path the pages name exists (files move: the pages follow)", () => {
    const missing: string[] = [];
    for (const page of pages.keys()) {
      const text = readFileSync(join(DOCS, page), "utf8");
      for (const m of text.matchAll(/`((?:src|test|cli|bench|scripts|migrations)\/[^`\s]*)`/g)) {
        if (!existsSync(join(ROOT, m[1]!.replace(/\/$/, "")))) missing.push(`docs/${page}: ${m[1]}`);
      }
    }
    expect(missing).toEqual([]);
  });

  test("the fixed page list is there", () => {
    for (const page of ["README.md", "glossary.md", "architecture.md", "gateway.md", "injection.md", "guards.md", "policy.md", "budgets.md", "agent-errors.md", "api.md", "api-reference.md", "configuration.md", "operations.md"]) {
      expect(pages.has(page)).toBe(true);
    }
  });

  test("every agent-facing error code the gateway answers with has its heading in agent-errors.md", () => {
    const codes = new Set<string>();
    for (const { path, text } of files) {
      if (!path.startsWith("src/gateway/")) continue;
      for (const m of text.matchAll(/error: "([a-z_]+)"/g)) codes.add(m[1]!);
    }
    expect(codes.size).toBeGreaterThan(15);
    const anchors = pages.get("agent-errors.md")!;
    expect([...codes].filter((c) => !anchors.has(c))).toEqual([]);
  });
});
