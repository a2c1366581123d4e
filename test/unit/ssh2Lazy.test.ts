// ssh2 is loaded the first time SSH is used, never at start (src/crypto/ssh2Module.ts): loaded at start it raised
// the gateway's peak memory under plain HTTPS load by some 60 MB for every user, SSH or not (bench/README.md). A
// fresh process imports what `credgate serve` imports (the gateway, the API, the serve command) and counts the
// ssh2 files in the module cache: none, and some once ssh2() is called (so the count is a real measure).
import { expect, test } from "bun:test";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "../..");

test("importing the gateway, the API and the serve command loads no file of ssh2", async () => {
  const script = `
    await import(${JSON.stringify(join(ROOT, "src/gateway/index.ts"))});
    await import(${JSON.stringify(join(ROOT, "src/api/app.ts"))});
    await import(${JSON.stringify(join(ROOT, "cli/serve.ts"))});
    const count = () => Object.keys(require.cache).filter((k) => k.includes("/node_modules/ssh2/")).length;
    const before = count();
    (await import(${JSON.stringify(join(ROOT, "src/crypto/ssh2Module.ts"))})).ssh2();
    console.log(JSON.stringify({ before, after: count() }));
  `;
  const proc = Bun.spawn([process.execPath, "-e", script], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  expect(err).toBe("");
  expect(code).toBe(0);
  const { before, after } = JSON.parse(out.trim().split("\n").pop()!);
  expect(before).toBe(0);
  expect(after).toBeGreaterThan(0);
}, 30_000);
