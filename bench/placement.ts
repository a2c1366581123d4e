// Where the benchmark's processes run. The ratio targets of the gateway issue are one-core figures, measured
// as ../shared/peer-bench does: the proxy alone on one core, the load client on another, the upstream beside
// the client (and on the proxy's idle core for direct runs), so that the gateway neither competes with its own
// load for a core nor borrows a second one. Without `taskset` or with one CPU everything floats, and the table
// says so.
import { spawnSync } from "bun";

export interface Placement {
  /** The CPU list (taskset syntax) of the gateway process and all its threads. */
  gateway: string;
  /** The CPU list of the load client and the upstream. */
  peers: string;
  /** Every CPU: for the all-core run. */
  all: string;
}

export function placement(disabled: boolean): Placement | null {
  const cpus = navigator.hardwareConcurrency;
  if (disabled || cpus < 2 || !Bun.which("taskset")) return null;
  return { gateway: "0", peers: cpus === 2 ? "1" : `1-${cpus - 1}`, all: `0-${cpus - 1}` };
}

/** Moves a running process and every one of its threads onto `cpus`. */
export function pinProcess(pid: number, cpus: string): void {
  const r = spawnSync(["taskset", "-a", "-pc", cpus, String(pid)], { stdout: "ignore", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`taskset -a -pc ${cpus} ${pid} failed: ${r.stderr.toString().trim()}`);
}

/** The command prefix that starts a program on `cpus` (nothing when not pinning). */
export function onCpus(cpus: string | undefined): string[] {
  return cpus ? ["taskset", "-c", cpus] : [];
}
