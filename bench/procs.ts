// Child processes of the benchmarks: servers that print `{"port":…}` when listening, and the load client.
// Every child is tracked and killed when the benchmark exits, however it exits.
import { spawn, type Subprocess } from "bun";
import { join } from "node:path";
import type { LoadConfig } from "./load.ts";
import { onCpus } from "./placement.ts";

export const BUN = process.execPath;
export const BENCH_DIR = import.meta.dir;

const children = new Set<Subprocess>();
const cleanups: (() => void)[] = [];

/** Something else to kill on exit (e.g. the credgate process, started by test/support). */
export function onCleanup(fn: () => void): void {
  cleanups.push(fn);
}

export function killAll(): void {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGTERM");
  for (const fn of cleanups) fn();
}

/** Waits for every tracked child to be gone. */
export async function reapAll(): Promise<void> {
  await Promise.all([...children].map((c) => c.exited));
}

process.on("exit", killAll);
for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
  process.on(sig, () => {
    killAll();
    process.exit(130);
  });
}

/** Starts `bun <script> …args` and waits for its `{"port":…}` line (`info`: the whole line). */
export async function startServer(script: string, args: string[]): Promise<{ proc: Subprocess; port: number; info: Record<string, number>; stop(): Promise<void> }> {
  const proc = spawn([BUN, join(BENCH_DIR, script), ...args], { stdin: "ignore", stdout: "pipe", stderr: "inherit" });
  children.add(proc);
  const reader = proc.stdout.getReader();
  const decoder = new TextDecoder();
  let text = "";
  const deadline = setTimeout(() => proc.kill(), 15_000);
  try {
    while (!text.includes("\n")) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`${script} exited before listening (code ${proc.exitCode})`);
      text += decoder.decode(value, { stream: true });
    }
  } finally {
    clearTimeout(deadline);
    reader.releaseLock();
  }
  const info = JSON.parse(text.slice(0, text.indexOf("\n"))) as Record<string, number> & { port: number };
  const port = info.port;
  return {
    proc,
    port,
    info,
    async stop() {
      proc.kill("SIGTERM");
      await proc.exited;
      children.delete(proc);
    },
  };
}

/** Runs the load client (bench/load.ts) in its own process, on `cpus` when given, and returns its JSON result. */
export async function runClient<T>(cfg: LoadConfig, cpus?: string): Promise<T> {
  const proc = spawn([...onCpus(cpus), BUN, join(BENCH_DIR, "load.ts"), JSON.stringify(cfg)], { stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  children.add(proc);
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  children.delete(proc);
  if (code !== 0) throw new Error(`load client failed (exit ${code}) for ${JSON.stringify({ ...cfg, proxy: cfg.proxy ? "…" : undefined })}:\n${err}${out}`);
  return JSON.parse(out.trim().split("\n").pop()!) as T;
}
