// README is what a new user reads first (issue 17): every command it shows runs from a clone as written
// (`npx bun cli/main.ts …` or the built `./dist/credgate …`), it cites no document the repository lacks, and
// it documents what `credgate run` needs to find its server.
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "../..");
const README = readFileSync(join(ROOT, "README.md"), "utf8");

/** Lines of the fenced shell blocks. */
function shellLines(): string[] {
  const lines: string[] = [];
  for (const block of README.matchAll(/```sh\n([\s\S]*?)```/g)) lines.push(...block[1]!.split("\n"));
  return lines;
}

describe("README", () => {
  test("every credgate command in a shell block is runnable from a clone: npx bun cli/main.ts or ./dist/credgate", () => {
    const invocations = shellLines().filter((l) => /(^|\s)(\S*credgate|npx bun cli\/main\.ts)\s+(serve|keys|run|migrate)\b/.test(l));
    expect(invocations.length).toBeGreaterThan(4);
    for (const line of invocations) expect(line).toMatch(/(npx bun cli\/main\.ts|\.\/dist\/credgate) (serve|keys|run|migrate)/);
  });

  test("cites no document that is not in the repository", () => {
    expect(README).not.toMatch(/§|wire contract|CONTRACT|SPEC\.md|ARCHITECTURE/);
    for (const [, path] of README.matchAll(/\]\(([^)#:]+)\)/g)) expect(existsSync(join(ROOT, path!))).toBe(true);
    for (const [, path] of README.matchAll(/`((?:src|test|cli|bench|migrations|\.ci)\/[^`\s]*)`/g)) expect(existsSync(join(ROOT, path!.replace(/\/$/, "")))).toBe(true);
  });

  test("lists prerequisites and documents CREDGATE_URL, CREDGATE_API_KEY, agents, grants and mode grants", () => {
    expect(README).toContain("## Prerequisites");
    expect(README).toMatch(/Node\.js 20/);
    for (const word of ["CREDGATE_URL", "CREDGATE_API_KEY", "POST", "/v1/agents", "/grants/secrets/", "mode `grants`", "--agent coder"]) expect(README).toContain(word);
  });
});
