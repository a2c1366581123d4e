// Rate-limit and budget windows are fixed and aligned to the Unix epoch (docs/policy.md#rate-limits; budget days,
// weeks and months start at 00:00 UTC): a test that counts in one window must not straddle two, or the count
// starts again in the middle of the test (a suite running across the top of the hour, or across midnight UTC).

/** Waits, if need be, until the current `windowMs` window has at least `needMs` left. */
export async function clearOfWindowEdge(windowMs: number, needMs = 20_000): Promise<void> {
  const left = windowMs - (Date.now() % windowMs);
  if (left < needMs) await Bun.sleep(left + 100);
}

export const HOUR_MS = 3_600_000;
export const DAY_MS = 24 * HOUR_MS;

/** For a file's `beforeEach`: each test starts clear of midnight UTC (every budget window's edge). Within a test's time limit. */
export const clearOfMidnight = () => clearOfWindowEdge(DAY_MS, 50_000);
