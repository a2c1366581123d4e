// The caches shared by an instance's gateway processes (docs/operations.md#gateway-workers-and-caches), as logic: TTLs
// against an injectable clock, one load per key in flight, failures, the size bound, and a worker's cache asking
// a primary's (here both in one process, joined by a CacheRemote as the IPC link joins them): the primary loads
// once per key per lifetime however many workers ask, and a worker keeps the entry until the primary's expiry.
import { describe, expect, test } from "bun:test";
import { SharedCaches, type CacheRemote, type Loaded } from "../../src/core/sharedCache.ts";

function counted(ttlMs: number, delayMs = 0) {
  const loads: string[] = [];
  let n = 0;
  return {
    loads,
    load: async (key: string): Promise<Loaded<string>> => {
      loads.push(key);
      if (delayMs) await Bun.sleep(delayMs);
      return { value: `${key}#${++n}`, ttlMs };
    },
  };
}

const failed = (reason: string) => `failed: ${reason}`;

describe("one process", () => {
  test("a value is kept for its lifetime (peek is synchronous), then loaded again", async () => {
    let now = 1_000;
    const src = counted(500);
    const cache = new SharedCaches().define("c", { load: src.load, failed, now: () => now });
    expect(cache.peek("a")).toBeUndefined();
    expect((await cache.get("a")).value).toBe("a#1");
    expect(cache.peek("a")).toEqual({ value: "a#1", expiresAt: 1_500 });
    now = 1_499;
    expect((await cache.get("a")).value).toBe("a#1");
    now = 1_500;
    expect(cache.peek("a")).toBeUndefined();
    expect((await cache.get("a")).value).toBe("a#2");
    expect(src.loads).toEqual(["a", "a"]);
  });

  test("concurrent gets of one key share one load; another key loads on its own", async () => {
    const src = counted(60_000, 20);
    const cache = new SharedCaches().define("c", { load: src.load, failed });
    const got = await Promise.all([...Array(20)].map(() => cache.get("a")));
    expect(new Set(got.map((e) => e.value))).toEqual(new Set(["a#1"]));
    expect((await cache.get("b")).value).toBe("b#2");
    expect(src.loads).toEqual(["a", "b"]);
  });

  test("a lifetime of 0 is shared by the callers waiting, and kept by nobody", async () => {
    const src = counted(0, 10);
    const cache = new SharedCaches().define("c", { load: src.load, failed });
    const [x, y] = await Promise.all([cache.get("k"), cache.get("k")]);
    expect(x!.value).toBe("k#1");
    expect(y!.value).toBe("k#1");
    expect(cache.peek("k")).toBeUndefined();
    expect((await cache.get("k")).value).toBe("k#2");
  });

  test("a load that rejects gives the `failed` value, kept by nobody", async () => {
    let calls = 0;
    const cache = new SharedCaches().define<string>("c", {
      load: async () => {
        calls++;
        throw new Error("boom");
      },
      failed,
    });
    expect((await cache.get("x")).value).toBe("failed: boom");
    expect(cache.peek("x")).toBeUndefined();
    await cache.get("x");
    expect(calls).toBe(2);
  });

  test("the size bound drops expired entries, then the oldest", async () => {
    let now = 0;
    const src = counted(100);
    const cache = new SharedCaches().define("c", { load: src.load, failed, now: () => now, maxEntries: 2 });
    await cache.get("a");
    await cache.get("b");
    await cache.get("c");
    expect(cache.peek("a")).toBeUndefined();
    expect(cache.peek("b")?.value).toBe("b#2");
    expect(cache.peek("c")?.value).toBe("c#3");
  });
});

/** A primary's caches and N workers' caches, each worker asking the primary through a remote (as over IPC). */
function instance(workers: number, ttlMs: number, clock: { now: number }, delayMs = 0) {
  const src = counted(ttlMs, delayMs);
  const now = () => clock.now;
  const primary = new SharedCaches();
  const primaryCache = primary.define("dns", { load: src.load, failed, now });
  const asked: string[] = [];
  const remote: CacheRemote = {
    ask(cache, key) {
      asked.push(key);
      // Structured as over IPC: the entry is copied (JSON), not shared.
      return primary.answer(cache, key)!.then((entry) => JSON.parse(JSON.stringify(entry)));
    },
  };
  const workerCaches = [...Array(workers)].map(() => {
    const caches = new SharedCaches();
    caches.attach(remote);
    // Defined after attach (as the gateway's vault cache is): it asks the primary too.
    return caches.define<string>("dns", { load: () => Promise.reject(new Error("a worker never loads")), failed, now });
  });
  return { src, primaryCache, workerCaches, asked };
}

describe("a primary and its workers", () => {
  test("one load per key per lifetime for the whole instance, however many workers ask", async () => {
    const clock = { now: 10_000 };
    const { src, primaryCache, workerCaches, asked } = instance(3, 1_000, clock);
    const all = [primaryCache, ...workerCaches];
    for (let round = 0; round < 5; round++) for (const c of all) expect((await c.get("api.example.com")).value).toBe("api.example.com#1");
    expect(src.loads).toHaveLength(1);
    // Each worker asked once, then answered itself.
    expect(asked).toHaveLength(3);
    expect(workerCaches[0]!.peek("api.example.com")).toEqual({ value: "api.example.com#1", expiresAt: 11_000 });
    clock.now = 11_000;
    for (const c of all) expect((await c.get("api.example.com")).value).toBe("api.example.com#2");
    expect(src.loads).toHaveLength(2);
  });

  test("concurrent asks from every worker while the primary loads: still one load", async () => {
    const clock = { now: 0 };
    const { src, workerCaches, asked } = instance(4, 60_000, clock, 20);
    const got = await Promise.all(workerCaches.flatMap((c) => [...Array(5)].map(() => c.get("ref"))));
    expect(new Set(got.map((e) => e.value))).toEqual(new Set(["ref#1"]));
    expect(src.loads).toHaveLength(1);
    // One question per worker (its own single flight), not per request.
    expect(asked).toHaveLength(4);
  });

  test("a worker whose primary cannot answer gets the `failed` value and keeps nothing", async () => {
    const caches = new SharedCaches();
    caches.attach({ ask: () => Promise.reject(new Error("the primary process did not answer within 30 s")) });
    const cache = caches.define("vault", { load: () => Promise.reject(new Error("unused")), failed });
    expect((await cache.get("op://a/b/c")).value).toBe("failed: the primary process did not answer within 30 s");
    expect(cache.peek("op://a/b/c")).toBeUndefined();
  });

  test("the primary answers null for a cache it does not have", () => {
    expect(new SharedCaches().answer("nope", "k")).toBeNull();
  });
});
