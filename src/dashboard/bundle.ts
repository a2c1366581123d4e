// Build-time macros: the dashboard's browser bundle (ui/main.ts, minified) and its stylesheet, inlined as text
// into credgate — source runs and the compiled binary alike serve them from memory, with no files beside the
// executable and nothing fetched from elsewhere.
import { readFileSync } from "node:fs";
import { join } from "node:path";

export function dashboardScript(): string {
  const entry = join(import.meta.dir, "ui", "main.ts");
  const r = Bun.spawnSync([process.execPath, "build", entry, "--target=browser", "--format=esm", "--minify"], { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`bundling the dashboard failed: ${r.stderr.toString()}`);
  return r.stdout.toString();
}

export function dashboardStyle(): string {
  return readFileSync(join(import.meta.dir, "ui", "style.css"), "utf8");
}
