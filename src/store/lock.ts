// An async mutex with an owner: the SQLite store's one connection is shared by every request, so a transaction
// holds this while it is open and statements of anyone else wait until it commits or rolls back.

export class OwnedLock<O extends object> {
  #owner: O | null = null;
  #waiters: (() => void)[] = [];

  get owner(): O | null {
    return this.#owner;
  }

  /** Resolves once `owner` holds the lock. */
  async acquire(owner: O): Promise<void> {
    while (this.#owner !== null) await this.released();
    this.#owner = owner;
  }

  release(): void {
    this.#owner = null;
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const wake of waiters) wake();
  }

  /** Resolves at the next release (callers re-check: another waiter may have taken the lock first). */
  released(): Promise<void> {
    return new Promise((resolve) => this.#waiters.push(resolve));
  }
}
