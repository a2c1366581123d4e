// How test/run.ts spreads the suite over its lanes: from each file's recorded wall time (test/timings.json,
// rewritten by `npm test -- --record-timings`), so the lanes end about together however the suite grows. A lane
// may start with what must run there (the Chromium suites together in one lane: two Chromiums at once made a page
// wait 30 s in vain; the unit and API tests, which share a process), then every other path — a SQLite e2e file, or
// a path of the PostgreSQL run — goes, longest first, to whichever lane would end soonest. A lane runs its SQLite
// paths in one process and its PostgreSQL paths in another (with a PostgreSQL server of its own). A file with no
// recorded time counts as the median of its engine's known ones.

export type Engine = "sqlite" | "postgres";

/** Recorded wall seconds per file, per engine. */
export type Timings = Record<Engine, Record<string, number>>;

/** A file or folder to run on one engine. */
export interface Item {
  engine: Engine;
  path: string;
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
 * Each lane's items: its start, then its share of `items`, so that the lanes' expected ends are as even as a
 * greedy longest-first placement makes them. Deterministic: ties go to the lower lane, equal times by path.
 */
export function balance(starts: Item[][], items: Item[], timings: Timings): { lanes: Item[][]; seconds: number[] } {
  const unknown = {
    sqlite: median(Object.values(timings.sqlite).filter((s) => s > 0)),
    postgres: median(Object.values(timings.postgres).filter((s) => s > 0)),
  };
  const cost = (item: Item) => secondsOf(timings[item.engine], item.path, unknown[item.engine]);
  const lanes = starts.map((start) => [...start]);
  const seconds = starts.map((start) => start.reduce((n, item) => n + cost(item), 0));
  const longestFirst = [...items].sort((a, b) => cost(b) - cost(a) || a.path.localeCompare(b.path) || a.engine.localeCompare(b.engine));
  for (const item of longestFirst) {
    let lane = 0;
    for (let i = 1; i < seconds.length; i++) if (seconds[i]! < seconds[lane]!) lane = i;
    lanes[lane]!.push(item);
    seconds[lane]! += cost(item);
  }
  return { lanes, seconds };
}
