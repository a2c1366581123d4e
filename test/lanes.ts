// How test/run.ts spreads the suite over its lanes: from each file's recorded wall time (test/timings.json,
// rewritten by `npm test -- --record-timings`), so the lanes end about together however the suite grows. Each lane
// starts with what must run there (the Chromium suites together in one lane: two Chromiums at once made a page
// wait 30 s in vain; the unit and API tests; the PostgreSQL run), then the other SQLite e2e files go, longest
// first, to whichever lane would end soonest. A file with no recorded time counts as the median of the known ones.

/** Recorded wall seconds per file, per engine. */
export type Timings = Record<"sqlite" | "postgres", Record<string, number>>;

/** What a lane runs first: paths (files or folders) on one engine. */
export interface LaneStart {
  engine: "sqlite" | "postgres";
  paths: string[];
}

/** The expected seconds of a path: a file's own time, a folder's the sum of its files'. */
export function secondsOf(timings: Record<string, number>, path: string, unknown: number): number {
  if (path.endsWith(".ts")) return timings[path] ?? unknown;
  const prefix = path.endsWith("/") ? path : `${path}/`;
  let sum = 0;
  for (const [file, s] of Object.entries(timings)) if (file.startsWith(prefix)) sum += s;
  return sum;
}

function median(values: number[]): number {
  if (values.length === 0) return 10;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/**
 * The SQLite e2e files each lane runs after its start, so that the lanes' expected ends are as even as a greedy
 * longest-first placement makes them. Deterministic: ties go to the lower lane, equal times by name.
 */
export function balance(starts: LaneStart[], files: string[], timings: Timings): { files: string[][]; seconds: number[] } {
  const unknown = median(files.map((f) => timings.sqlite[f]).filter((s): s is number => s !== undefined));
  const seconds = starts.map((s) => s.paths.reduce((n, p) => n + secondsOf(timings[s.engine], p, unknown), 0));
  const placed: string[][] = starts.map(() => []);
  const longestFirst = [...files].sort((a, b) => (timings.sqlite[b] ?? unknown) - (timings.sqlite[a] ?? unknown) || a.localeCompare(b));
  for (const file of longestFirst) {
    let lane = 0;
    for (let i = 1; i < seconds.length; i++) if (seconds[i]! < seconds[lane]!) lane = i;
    placed[lane]!.push(file);
    seconds[lane]! += timings.sqlite[file] ?? unknown;
  }
  return { files: placed.map((l) => l.sort()), seconds };
}
