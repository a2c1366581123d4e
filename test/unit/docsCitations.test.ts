// The repository describes itself: code, tests and benchmarks cite docs/<page>.md#<heading> and nothing
// outside the repository (no `CONTRACT` and no bare `§` section numbers; `RFC 9110 §5.5` is a standard, and
// fine), every citation names a page that exists and a heading it has, and the docs' own links resolve.
// scripts/cite-docs.ts rewrites old references; its mapping is tested here too.
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { slug } from "../../scripts/gen-api-reference.ts";
import { REFERENCE, rewriteLine, ROOT, scannedFiles } from "../../scripts/cite-docs.ts";

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
    for (const page of ["README.md", "architecture.md", "gateway.md", "injection.md", "guards.md", "policy.md", "budgets.md", "agent-errors.md", "api.md", "api-reference.md", "configuration.md", "operations.md"]) {
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

describe("scripts/cite-docs.ts", () => {
  const rewrite = (line: string, previous = "", next = "") => {
    const unmapped: string[] = [];
    const out = rewriteLine(line, (t) => unmapped.push(t), previous, next);
    return { ...out, unmapped };
  };

  test("a CONTRACT section becomes the page and heading that describe it", () => {
    expect(rewrite("// Stage — `claim_required` (CONTRACT §6.12, pipeline step 8): an unclaimed").line).toBe("// Stage — `claim_required` (docs/guards.md#claim-required): an unclaimed");
    expect(rewrite("// Reads a body (CONTRACT §0.2), capped").line).toBe("// Reads a body (docs/api.md#bodies-and-formats), capped");
  });

  test("bare sections, ranges, steps, examples and items", () => {
    expect(rewrite('describe("bearer keys (§1.2 step 1)", () => {').line).toBe('describe("bearer keys (docs/api.md#how-a-request-is-authenticated)", () => {');
    expect(rewrite("// Policy evaluation (CONTRACT §6.9–6.10), pure").line).toBe("// Policy evaluation (docs/policy.md#evaluation, docs/policy.md#rate-limits), pure");
    expect(rewrite("// (CONTRACT §7 CLI, §1-§2 over real HTTP)").line).toBe("// (docs/configuration.md#commands CLI, docs/api.md#how-a-request-is-authenticated, docs/api.md#error-shapes over real HTTP)");
    expect(rewrite("// §9 examples 9 and 22").line).toBe("// docs/gateway.md#proxy-authentication");
    expect(rewrite("// (§8 item 13)").line).toBe("// (docs/injection.md#external-vault)");
  });

  test("the words around a reference choose the heading; quoted sub-names are consumed", () => {
    expect(rewrite("// The echo guard (CONTRACT §6.17): an upstream").line).toBe("// The echo guard (docs/guards.md#echo-guard): an upstream");
    expect(rewrite('// Agent grants (CONTRACT §3.2, §5.1 "Grants"): which').line).toBe("// Agent grants (docs/injection.md#grants): which");
    expect(rewrite("// the shape (CONTRACT §6.15 `resource_access_denied`)").line).toBe("// the shape (docs/agent-errors.md#resource_access_denied)");
    // A wrapped comment: the reference that ends a line is qualified by the next one.
    expect(rewrite("// (see §6.14", "", "// guidance rewrite)").line).toBe("// (see docs/gateway.md#guidance-rewrite");
  });

  test("standards citations and unknown sections are left alone; unknown ones are reported", () => {
    expect(rewrite("// RFC 9110 §5.6.2 says").line).toBe("// RFC 9110 §5.6.2 says");
    const unknown = rewrite("// CONTRACT §42.1 says");
    expect(unknown.line).toBe("// CONTRACT §42.1 says");
    expect(unknown.unmapped).toEqual(["CONTRACT §42.1"]);
  });

  test("idempotent: a rewritten line has nothing left to rewrite", () => {
    const once = rewrite("// Injection (CONTRACT §6.5–6.7, §6.2 in-tunnel re-checks, §6.14 guidance rewrite; §9 examples 23–29)").line;
    expect(rewrite(once)).toEqual({ line: once, count: 0, unmapped: [] });
    expect(once.match(REFERENCE)).toBeNull();
  });

});
