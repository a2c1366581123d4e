// Build-time macro: undici bundled into one CommonJS file, inlined as text into credgate (source runs and
// the compiled binary alike). `credgate run` writes it next to a preload so that Node versions whose
// fetch() ignores HTTPS_PROXY (before NODE_USE_ENV_PROXY existed) still go through the gateway.
import { join } from "node:path";

export function undiciBundle(): string {
  const entry = join(import.meta.dir, "../../node_modules/undici/index.js");
  const r = Bun.spawnSync([process.execPath, "build", entry, "--target=node", "--format=cjs", "--minify"], { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`bundling undici failed: ${r.stderr.toString()}`);
  return r.stdout.toString();
}
