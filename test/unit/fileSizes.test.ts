// No hand-written source file over 450 lines (docs/architecture.md#conventions): a file that long is usually two
// ideas. Every .ts/.tsx file of src/, cli/, scripts/, bench/ and test/support/ is counted, except generated ones
// (their first line starts `// Generated`), which are rewritten by a script and never read as prose.
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";

const ROOT = join(import.meta.dir, "../..");
const DIRS = ["src", "cli", "scripts", "bench", "test/support"];
const MAX_LINES = 450;

function tsFiles(dir: string, out: string[] = []): string[] {
  for (const entry of readdirSync(dir)) {
    if (entry === "node_modules") continue;
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) tsFiles(path, out);
    else if (/\.tsx?$/.test(entry) && !entry.endsWith(".d.ts")) out.push(path);
  }
  return out;
}

/** Lines as `wc -l` counts them (a last line without its newline counts too). */
function lineCount(text: string): number {
  const parts = text.split("\n").length;
  return text.endsWith("\n") ? parts - 1 : parts;
}

function isGenerated(text: string): boolean {
  return /^\/\/ Generated\b/i.test(text);
}

describe("file sizes", () => {
  test(`no hand-written .ts file of ${DIRS.join(", ")} has more than ${MAX_LINES} lines`, () => {
    const files = DIRS.map((d) => join(ROOT, d)).filter(existsSync).flatMap((d) => tsFiles(d));
    expect(files.length).toBeGreaterThan(100);
    const offenders: string[] = [];
    for (const file of files) {
      const text = readFileSync(file, "utf8");
      const lines = lineCount(text);
      if (lines > MAX_LINES && !isGenerated(text)) offenders.push(`${relative(ROOT, file)}: ${lines} lines`);
    }
    expect(offenders).toEqual([]);
  });

  test("the exemption is for generated files only: the generated schema files say so on their first line", () => {
    for (const file of ["src/store/schema.sqlite.ts", "src/store/schema.pg.ts", "src/dashboard/ui/api-types.ts"]) {
      expect(isGenerated(readFileSync(join(ROOT, file), "utf8"))).toBe(true);
    }
    expect(isGenerated("// The gateway's in-memory view, generated on demand\n")).toBe(false);
    expect(isGenerated("// One agent's database session, relayed\n")).toBe(false);
    expect(lineCount("a\nb\n")).toBe(2);
    expect(lineCount("a\nb")).toBe(2);
  });
});
