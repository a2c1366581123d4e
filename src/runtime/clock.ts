// The clock that time-limited records read (approval expiries, remembered approvals, budget windows): the
// system clock shifted by CREDGATE_TEST_NOW_OFFSET_SECONDS, so tests can move past an expiry from outside the
// process (docs/configuration.md). Heartbeats, leases, timers and log times keep the system clock.

let offsetMs = 0;

/** Set once at start from the configuration (0 in production; refused in cloud mode by config.ts). */
export function setClockOffset(seconds: number): void {
  offsetMs = seconds * 1000;
}

/** Milliseconds since the epoch, shifted. */
export function clockNow(): number {
  return Date.now() + offsetMs;
}

export function clockIso(): string {
  return new Date(clockNow()).toISOString();
}
