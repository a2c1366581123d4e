// Login throttling (docs/api.md#accounts-and-sessions): after 10 failed logins in 15 minutes for one email or key, further attempts
// are refused until the oldest failures age out. Counted in the store, so that every instance sharing a
// database counts the same failures. Each attempt first takes a failure slot (a row) — atomically, with the
// subject locked — and gives it back on success: concurrent attempts on any instance cannot exceed the limit.
import { and, eq, gt, lt, sql } from "drizzle-orm";
import { tokenHash } from "../crypto/hash.ts";
import { newId } from "../core/ids.ts";
import type { ServiceDeps } from "./deps.ts";

export const LOGIN_FAILURE_LIMIT = 10;
export const LOGIN_FAILURE_WINDOW_MS = 15 * 60 * 1000;

export class LoginThrottle {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly now: () => number = Date.now,
  ) {}

  /** The stored subject: a hash, so neither an email nor a key attempt is kept in the clear. */
  static subject(kind: "email" | "key", value: string): string {
    return tokenHash(`${kind}:${kind === "email" ? value.toLowerCase() : value}`);
  }

  /**
   * Takes a failure slot for the subject; false when the subject already has the limit of recent failures.
   * The slot stays a failure unless `succeeded` is called.
   */
  async attempt(subject: string): Promise<boolean> {
    const { loginFailures: f } = this.deps.store.t;
    const { store } = this.deps;
    const now = this.now();
    const cutoff = new Date(now - LOGIN_FAILURE_WINDOW_MS).toISOString();
    return store.transaction(async () => {
      await store.lockKey(`login:${subject}`);
      await store.db.delete(f).where(lt(f.failedAt, cutoff));
      const [row] = await store.db
        .select({ n: sql<number>`count(*)` })
        .from(f)
        .where(and(eq(f.subject, subject), gt(f.failedAt, cutoff)));
      if (Number(row?.n ?? 0) >= LOGIN_FAILURE_LIMIT) return false;
      await store.db.insert(f).values({ id: newId(), subject, failedAt: new Date(now).toISOString() });
      return true;
    });
  }

  /** A successful login clears the subject's failures (its own slot included). */
  async succeeded(subject: string): Promise<void> {
    const { loginFailures: f } = this.deps.store.t;
    await this.deps.store.db.delete(f).where(eq(f.subject, subject));
  }
}
