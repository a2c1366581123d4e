// The resident memory of a process (Linux /proc), now and at its peak while watched every 100 ms.
import { readFileSync } from "node:fs";

export class RssWatch {
  peak = 0;
  #timer: ReturnType<typeof setInterval> | null = null;

  constructor(private readonly pid: number) {}

  now(): number {
    const status = readFileSync(`/proc/${this.pid}/status`, "utf8");
    const kb = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? NaN);
    return kb / 1024;
  }

  start(): void {
    this.#timer = setInterval(() => (this.peak = Math.max(this.peak, this.now())), 100);
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.peak = Math.max(this.peak, this.now());
  }
}
