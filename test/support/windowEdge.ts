// Rate-limit windows are fixed and aligned to the Unix epoch (docs/policy.md#rate-limits): a test that counts
// requests in one window must not straddle two, or the count starts again in the middle of the test (a suite
// running across the top of the hour).

/** Waits, if need be, until the current `windowMs` window has at least `needMs` left. */
export async function clearOfWindowEdge(windowMs: number, needMs = 20_000): Promise<void> {
  const left = windowMs - (Date.now() % windowMs);
  if (left < needMs) await Bun.sleep(left + 100);
}

export const HOUR_MS = 3_600_000;
