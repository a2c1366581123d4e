// The preload's guard (test/support/tmpGuard.ts), through a real `bun test` run whose temp dir (TMPDIR) is a
// directory of this test: a run whose test changed that dir's mode fails with the message; one that did not passes.
import { expect, test } from "bun:test";
import { chmodSync, mkdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "../support/tmp.ts";

const FIXTURE = join(import.meta.dir, "../support/fixtures/changesTempDir.fixture.ts");

async function runFixture(change: boolean) {
  const fakeTmp = join(tempDir(), "tmp");
  mkdirSync(fakeTmp);
  chmodSync(fakeTmp, 0o1777);
  const proc = Bun.spawn([process.execPath, "test", FIXTURE], {
    cwd: join(import.meta.dir, "../.."),
    env: { ...process.env, TMPDIR: fakeTmp, CHANGE_TEMP_DIR: change ? "1" : "0" },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, output: stdout + stderr, fakeTmp, mode: (statSync(fakeTmp).mode & 0o7777).toString(8) };
}

test("a run whose test changed the temp dir's mode fails, naming the change and the fix", async () => {
  const r = await runFixture(true);
  expect(r.mode).toBe("755");
  expect(r.code).toBe(1);
  expect(r.output).toContain(`a test changed ${r.fakeTmp}: mode 1777 → 0755, owner ${process.getuid!()}:${process.getgid!()} → ${process.getuid!()}:${process.getgid!()}.`);
  expect(r.output).toContain(`Restore it with: chmod 1777 ${r.fakeTmp}`);
});

test("a run that left the temp dir alone passes", async () => {
  const r = await runFixture(false);
  expect(r.output).not.toContain("a test changed");
  expect(r.code).toBe(0);
  expect(r.mode).toBe("1777");
});
