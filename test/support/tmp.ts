// Temporary directories for tests, removed once the tests are over (or at process exit, outside bun test).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const made: string[] = [];

/** Removes every directory made so far (the test preload calls it after the tests; bun test runs no exit handler). */
export function removeTempDirs(): void {
  for (const d of made.splice(0)) rmSync(d, { recursive: true, force: true });
}
process.on("exit", removeTempDirs);

export function tempDir(prefix = "credgate-test-"): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  made.push(d);
  return d;
}
