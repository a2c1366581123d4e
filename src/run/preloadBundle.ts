// Build-time macro: the Node preload (run/nodePreload.ts, with undici) bundled into one CommonJS file, inlined as
// text into credgate (source runs and the compiled binary alike: no node_modules needed beside it). `credgate
// run` writes it to a temp file and loads it into Node with NODE_OPTIONS=--require.
import { join } from "node:path";

export function nodePreloadBundle(): string {
  const entry = join(import.meta.dir, "nodePreload.ts");
  const r = Bun.spawnSync([process.execPath, "build", entry, "--target=node", "--format=cjs", "--minify"], { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`bundling the Node preload failed: ${r.stderr.toString()}`);
  return r.stdout.toString();
}
