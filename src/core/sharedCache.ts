// Caches that the gateway processes of one instance share (docs/operations.md#gateway-workers-and-caches): DNS
// answers, external-vault values, OAuth refreshes. The primary process loads; a gateway worker asks the primary
// (over IPC, through a CacheRemote) for what it does not hold, and keeps the answer until the same absolute expiry
// as the primary. So an upstream is asked once per key per lifetime for the whole instance, however many workers,
// and a value the primary holds serves every process. Per key one load (or one question) is in flight; `peek` is
// synchronous and allocates nothing, so the gateway's hot path stays await-free on a hit.

/** An entry: the value and the wall-clock time (ms since the epoch) it stops being used. */
export interface Fresh<V> {
  readonly value: V;
  readonly expiresAt: number;
}

/** What a load gives: the value and how long it may be used (0: only by the callers waiting for it now). */
export interface Loaded<V> {
  value: V;
  ttlMs: number;
}

/** How a worker reaches the primary's caches. */
export interface CacheRemote {
  ask(cache: string, key: string): Promise<Fresh<unknown>>;
}

export interface SharedCacheOptions<V> {
  /** Loads a key in the primary (or in a process with no primary). Should not reject: a rejection becomes `failed`. */
  load: (key: string) => Promise<Loaded<V>>;
  /** The value for a load that rejected, or a primary that could not be asked (not kept). */
  failed: (reason: string) => V;
  /** Upper bound on kept keys: expired entries, then the oldest, are dropped beyond it. */
  maxEntries?: number;
  /** Wall clock in milliseconds (injectable for tests); every process of a machine shares it. */
  now?: () => number;
}

export class SharedCache<V> {
  readonly #entries = new Map<string, Fresh<V>>();
  readonly #inflight = new Map<string, Promise<Fresh<V>>>();
  readonly #now: () => number;
  readonly #max: number;
  #remote: CacheRemote | null = null;

  constructor(
    readonly name: string,
    private readonly opts: SharedCacheOptions<V>,
  ) {
    this.#now = opts.now ?? Date.now;
    this.#max = opts.maxEntries ?? 10_000;
  }

  /** From now on, keys this process does not hold are asked of the primary. */
  attach(remote: CacheRemote): void {
    this.#remote = remote;
  }

  /** The entry for `key` while it is fresh, else undefined. */
  peek(key: string): Fresh<V> | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    if (this.#now() < entry.expiresAt) return entry;
    this.#entries.delete(key);
    return undefined;
  }

  /** The fresh entry, the fetch in flight, or a new fetch (from the primary, or loaded here). Never rejects. */
  get(key: string): Promise<Fresh<V>> {
    const hit = this.peek(key);
    if (hit !== undefined) return Promise.resolve(hit);
    const running = this.#inflight.get(key);
    if (running !== undefined) return running;
    const flight = (this.#remote ? this.#ask(this.#remote, key) : this.#load(key)).then((entry) => {
      this.#inflight.delete(key);
      this.#keep(key, entry);
      return entry;
    });
    this.#inflight.set(key, flight);
    return flight;
  }

  #load(key: string): Promise<Fresh<V>> {
    return this.opts.load(key).then(
      (loaded) => ({ value: loaded.value, expiresAt: this.#now() + loaded.ttlMs }),
      (err: Error) => ({ value: this.opts.failed(err?.message ?? String(err)), expiresAt: 0 }),
    );
  }

  #ask(remote: CacheRemote, key: string): Promise<Fresh<V>> {
    return remote.ask(this.name, key).then(
      (entry) => entry as Fresh<V>,
      (err: Error) => ({ value: this.opts.failed(err?.message ?? String(err)), expiresAt: 0 }),
    );
  }

  #keep(key: string, entry: Fresh<V>): void {
    this.#entries.delete(key);
    if (!(this.#now() < entry.expiresAt)) return;
    this.#entries.set(key, entry);
    if (this.#entries.size <= this.#max) return;
    const now = this.#now();
    for (const [k, e] of this.#entries) if (e.expiresAt <= now) this.#entries.delete(k);
    // Still full: drop the oldest insertions.
    for (const k of this.#entries.keys()) {
      if (this.#entries.size <= this.#max) break;
      this.#entries.delete(k);
    }
  }
}

/** A process's shared caches, by name: the primary answers its workers' questions from them. */
export class SharedCaches {
  readonly #caches = new Map<string, SharedCache<unknown>>();
  #remote: CacheRemote | null = null;

  /** A cache of this process; a worker's asks the primary's cache of the same name. */
  define<V>(name: string, opts: SharedCacheOptions<V>): SharedCache<V> {
    const cache = new SharedCache<V>(name, opts);
    if (this.#remote) cache.attach(this.#remote);
    this.#caches.set(name, cache as SharedCache<unknown>);
    return cache;
  }

  /** This process is a gateway worker: every cache, defined now or later, asks the primary. */
  attach(remote: CacheRemote): void {
    this.#remote = remote;
    for (const cache of this.#caches.values()) cache.attach(remote);
  }

  /** The primary's answer to a worker: the entry of its cache `name` for `key`, or null when there is no such cache. */
  answer(name: string, key: string): Promise<Fresh<unknown>> | null {
    return this.#caches.get(name)?.get(key) ?? null;
  }
}
