// The Store contract (src/store/store.ts), on the engine under test: every operation services rely on, held to
// what the interface promises, so that the SQLite and PostgreSQL stores are interchangeable. Stores are opened
// directly (src/store/open.ts) on a database of the file's own; where the promise spans instances (startup lock,
// key locks, budget reservations, notifications), PostgreSQL runs it across two stores opened on that database,
// as two credgate instances would. storeTransactions.test.ts covers services joining a transaction and change
// events. Timing is never asserted: a test that needs something blocked waits until the server shows it waiting.
import { Database } from "bun:sqlite";
import { afterAll, afterEach, describe, expect, test } from "bun:test";
import * as net from "node:net";
import { join } from "node:path";
import { asc, eq, sql, type SQL } from "drizzle-orm";
import { SQLiteAsyncDialect } from "drizzle-orm/sqlite-core";
import { DB_FILE, openStore } from "../../src/store/open.ts";
import type { RequestLogInsert, SpendRecordInsert, Store } from "../../src/store/store.ts";
import { freshDatabase, testEngine } from "../support/postgres.ts";
import { tempDir } from "../support/tmp.ts";

const engine = testEngine();
const onPostgres = engine === "postgres";

/** What a test opened: closed when it ends. */
const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await Promise.resolve(c()).catch(() => {});
});
/** What the file's tests share: closed once they are all done. */
const sharedCleanups: (() => Promise<unknown> | unknown)[] = [];
afterAll(async () => {
  for (const c of sharedCleanups.splice(0).reverse()) await Promise.resolve(c()).catch(() => {});
});

interface Stores {
  store: Store;
  /** Another instance on the same database (PostgreSQL); the same store on SQLite (one process owns the file). */
  b: Store;
  where: { dataDir: string; databaseUrl: string | null };
  /** Opens one more store on the same database, closed when the test ends. */
  another(): Promise<Store>;
  /** Reads what is committed, from a connection of its own (outside every transaction of the stores). */
  committed<R = Record<string, unknown>>(statement: SQL): Promise<R[]>;
}

async function openStores(): Promise<Stores> {
  const where = { dataDir: tempDir(), databaseUrl: onPostgres ? await freshDatabase() : null };
  const open = async (list: typeof cleanups) => {
    const s = await openStore(where);
    list.push(() => s.close());
    return s;
  };
  const store = await open(sharedCleanups);
  const b = onPostgres ? await open(sharedCleanups) : store;
  let committed: Stores["committed"];
  if (onPostgres) {
    const observer = await open(sharedCleanups);
    committed = (statement) => observer.query(statement);
  } else {
    // A second connection on the file: it reads the last commit, and synchronously (at the moment of the call).
    const db = new Database(join(where.dataDir, DB_FILE), { readonly: true });
    sharedCleanups.push(() => db.close());
    const dialect = new SQLiteAsyncDialect();
    committed = async (statement) => {
      const q = dialect.sqlToQuery(statement);
      return db.query(q.sql).all(...(q.params as never[])) as never[];
    };
  }
  return { store, b, where, another: () => open(cleanups), committed };
}

let shared: Promise<Stores> | null = null;
/**
 * The stores of the file's database, opened once (a database per test would cost more than the tests): tests
 * keep apart by keys, hosts and budgets of their own; one that closes a store opens its own (`another`).
 */
function stores(): Promise<Stores> {
  shared ??= openStores();
  return shared;
}

function gate(): { open: () => void; opened: Promise<void> } {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return { open, opened };
}

async function waitFor(what: string, cond: () => boolean | Promise<boolean>): Promise<void> {
  const until = Date.now() + 15_000;
  while (!(await cond())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(5);
  }
}

/** A few turns of the event loop: what is not blocked has run by then (in-process, SQLite). */
async function turns(n = 10): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise<void>((r) => setImmediate(r));
}

/**
 * Resolves once `count` sessions of the database wait for a lock (PostgreSQL: seen by the server, so the
 * waiter is blocked for certain); on SQLite, after a few turns of the event loop.
 */
async function lockWaits(f: Stores, count = 1): Promise<void> {
  if (!onPostgres) return turns();
  await waitFor(`${count} session(s) waiting for a lock`, async () => {
    const [r] = await f.committed<{ n: number }>(sql`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`);
    return r!.n >= count;
  });
}

const settingKeys = async (f: Stores, prefix: string) =>
  (await f.committed<{ key: string }>(sql`SELECT key FROM settings WHERE key LIKE ${`${prefix}%`} ORDER BY key`)).map((r) => r.key);

let n = 0;
function logRow(host: string, patch: Partial<RequestLogInsert> = {}): RequestLogInsert {
  n++;
  return {
    id: crypto.randomUUID(),
    organizationId: "org-1",
    projectId: "project-1",
    agentId: "agent-1",
    method: "GET",
    host,
    path: `/r/${n}`,
    provider: null,
    status: 200,
    latencyMs: 3,
    injectionCount: 1,
    decision: "allowed",
    matchedRuleLogicalId: null,
    matchedRuleName: null,
    approvalId: null,
    costNanos: null,
    requestId: `req-${n}`,
    mcpServerId: null,
    createdAt: new Date(Date.UTC(2031, 0, 1) + n).toISOString(),
    ...patch,
  };
}

async function logsOf(store: Store, host: string) {
  const t = store.t.requestLogs;
  return store.db.select().from(t).where(eq(t.host, host)).orderBy(asc(t.seq));
}

const withoutSeq = <R extends { seq: number }>(rows: R[]) => rows.map(({ seq: _seq, ...r }) => r);

function spendRow(model: string, patch: Partial<SpendRecordInsert> = {}): SpendRecordInsert {
  n++;
  return {
    organizationId: "org-1",
    projectId: "project-1",
    agentId: "agent-1",
    secretType: "llm_a",
    model,
    inputTokens: 10,
    outputTokens: 20,
    costNanos: 1_000,
    createdAt: new Date(Date.UTC(2031, 0, 1) + n).toISOString(),
    ...patch,
  };
}

describe("transaction", () => {
  test("returns what the work returns; rejects with the work's own error and keeps none of its writes", async () => {
    const f = await stores();
    const { store } = f;
    const { settings } = store.t;
    expect(await store.transaction(async () => (await store.db.insert(settings).values({ key: "c-kept", value: "1" }), 42))).toBe(42);
    const boom = new Error("boom");
    const failed = await store
      .transaction(async () => {
        await store.db.insert(settings).values({ key: "c-lost", value: "1" });
        await store.execute(`INSERT INTO settings (key, value) VALUES ($1, $2)`, ["c-lost-execute", "1"]);
        await store.query(sql`INSERT INTO settings (key, value) VALUES ('c-lost-query', '1')`);
        throw boom;
      })
      .catch((err: unknown) => err);
    expect(failed).toBe(boom);
    expect(await settingKeys(f, "c-")).toEqual(["c-kept"]);
    // The store is usable after a rollback.
    await store.transaction(() => store.db.insert(settings).values({ key: "c-after", value: "1" }));
    expect(await settingKeys(f, "c-")).toEqual(["c-after", "c-kept"]);
  });

  test("inside, every way of reading sees the transaction's own writes; reads of anyone else never see them", async () => {
    const f = await stores();
    const { store } = f;
    const { settings } = store.t;
    const held = gate();
    const written = gate();
    const tx = store
      .transaction(async () => {
        await store.db.insert(settings).values({ key: "v-own", value: "1" });
        expect((await store.db.select().from(settings).where(eq(settings.key, "v-own"))).length).toBe(1);
        expect(await store.query(sql`SELECT key FROM settings WHERE key = 'v-own'`)).toEqual([{ key: "v-own" }]);
        expect(await store.execute(`SELECT key FROM settings WHERE key = $1`, ["v-own"])).toEqual([{ key: "v-own" }]);
        written.open();
        await held.opened;
        throw new Error("roll back");
      })
      .catch((err: Error) => err.message);
    await written.opened;
    // Another connection reads the last commit: not this write.
    expect(await settingKeys(f, "v-")).toEqual([]);
    // The store's own reads, issued while the transaction is open, are not part of it either (on the one SQLite
    // connection they wait for its end, on PostgreSQL they run beside it): they never see what it rolls back.
    const reads = Promise.all([
      store.query<{ key: string }>(sql`SELECT key FROM settings WHERE key LIKE 'v-%'`),
      store.execute<{ key: string }>(`SELECT key FROM settings WHERE key LIKE $1`, ["v-%"]),
      store.db.select({ key: settings.key }).from(settings).where(eq(settings.key, "v-own")),
    ]);
    await turns();
    held.open();
    expect(await tx).toBe("roll back");
    expect(await reads).toEqual([[], [], []]);
    expect(await settingKeys(f, "v-")).toEqual([]);
  });

  test("every store operation issued while another transaction is open stays out of it and survives its rollback", async () => {
    const f = await stores();
    const { store } = f;
    const { settings } = store.t;
    const held = gate();
    const entered = gate();
    const tx = store
      .transaction(async () => {
        await store.db.insert(settings).values({ key: "o-own", value: "1" });
        entered.open();
        await held.opened;
        throw new Error("roll back");
      })
      .catch((err: Error) => err.message);
    await entered.opened;
    // Started now (outside the transaction's async context), each finishing whenever the engine lets it.
    const outside = Promise.all([
      store.insertRequestLogs([logRow("outside.test")]),
      store.appendRequestLogs([logRow("outside.test"), logRow("outside.test")]),
      store.insertSpendRecords([spendRow("outside-model")]),
      store.execute(`INSERT INTO settings (key, value) VALUES ($1, $2)`, ["o-execute", "1"]),
      store.query(sql`INSERT INTO settings (key, value) VALUES ('o-query', '1')`),
      store.db.insert(settings).values({ key: "o-db", value: "1" }).then(() => "ok"),
    ]);
    await turns();
    held.open();
    expect(await tx).toBe("roll back");
    await outside;
    expect(await settingKeys(f, "o-")).toEqual(["o-db", "o-execute", "o-query"]);
    expect((await logsOf(store, "outside.test")).length).toBe(3);
    expect(await f.committed(sql`SELECT model FROM spend_records WHERE model = 'outside-model'`)).toEqual([{ model: "outside-model" }]);
  });

  test("a nested transaction joins the outer one: it sees its writes, commits and rolls back with it", async () => {
    const f = await stores();
    const { store } = f;
    const { settings } = store.t;
    const log: string[] = [];
    await store.transaction(async () => {
      await store.db.insert(settings).values({ key: "n-outer", value: "1" });
      const inner = await store.transaction(async () => {
        await store.db.insert(settings).values({ key: "n-inner", value: "1" });
        store.afterCommit(() => log.push("inner after commit"));
        return (await store.db.select().from(settings).where(eq(settings.key, "n-outer"))).length;
      });
      expect(inner).toBe(1);
      // The inner transaction "returned" but nothing is committed until the outer one commits.
      expect(await settingKeys(f, "n-")).toEqual([]);
      expect(log).toEqual([]);
    });
    expect(log).toEqual(["inner after commit"]);
    expect(await settingKeys(f, "n-")).toEqual(["n-inner", "n-outer"]);

    const failed = await store
      .transaction(async () => {
        await store.transaction(() => store.db.insert(settings).values({ key: "n-rolled-inner", value: "1" }));
        store.afterCommit(() => log.push("dropped"));
        throw new Error("outer fails");
      })
      .catch((err: Error) => err.message);
    expect(failed).toBe("outer fails");
    expect(await settingKeys(f, "n-")).toEqual(["n-inner", "n-outer"]);
    expect(log).toEqual(["inner after commit"]);
  });

  test("statements a transaction runs side by side (Promise.all) are all part of it", async () => {
    const f = await stores();
    const { store } = f;
    const { settings } = store.t;
    const write = (key: string) => store.db.insert(settings).values({ key, value: "1" });
    const failed = await store
      .transaction(async () => {
        await Promise.all([write("p-1"), write("p-2"), store.execute(`INSERT INTO settings (key, value) VALUES ($1, $2)`, ["p-3", "1"]), store.query(sql`INSERT INTO settings (key, value) VALUES ('p-4', '1')`)]);
        throw new Error("rolled back");
      })
      .catch((err: Error) => err.message);
    expect(failed).toBe("rolled back");
    expect(await settingKeys(f, "p-")).toEqual([]);
    await store.transaction(() => Promise.all([write("p-5"), write("p-6")]));
    expect(await settingKeys(f, "p-")).toEqual(["p-5", "p-6"]);
  });

  test("work begun inside a transaction that goes on after it ended (a timer, an unawaited promise) runs outside any transaction", async () => {
    const f = await stores();
    const { store } = f;
    const { settings } = store.t;
    const later = gate();
    let goingOn!: Promise<string[]>;
    await store.transaction(async () => {
      await store.db.insert(settings).values({ key: "l-in", value: "1" });
      // Carries the transaction's async context, and runs once the transaction is over.
      goingOn = later.opened.then(async () => {
        const seen: string[] = [];
        await store.db.insert(settings).values({ key: "l-own", value: "1" });
        // A transaction it opens is one of its own: its rollback undoes its writes.
        const failed = await store
          .transaction(async () => {
            await store.db.insert(settings).values({ key: "l-rolled-back", value: "1" });
            throw new Error("rolled back");
          })
          .catch((err: Error) => err.message);
        seen.push(failed);
        store.afterCommit(() => seen.push("after commit, at once"));
        await store.beforeCommit(async () => void seen.push("before commit, now"));
        return seen;
      });
    });
    later.open();
    // A statement made on the ended transaction would never settle (PostgreSQL) or would escape every transaction
    // (SQLite): bounded, so that such a store fails here rather than at the test's timeout.
    const seen = await Promise.race([goingOn, Bun.sleep(10_000).then(() => ["still waiting"])]);
    expect(seen).toEqual(["rolled back", "after commit, at once", "before commit, now"]);
    expect(await settingKeys(f, "l-")).toEqual(["l-in", "l-own"]);
  });
});

describe("afterCommit", () => {
  test("runs once the transaction committed (its writes visible to others), in order; dropped on rollback; at once outside", async () => {
    const f = await stores();
    const { store } = f;
    const { settings } = store.t;
    const seen: string[][] = [];
    const order: string[] = [];
    const outsideDb = store.db;
    let callbackDb: unknown = null;
    let callbackWrite: Promise<unknown> | null = null;
    await store.transaction(async () => {
      await store.db.insert(settings).values({ key: "a-1", value: "1" });
      store.afterCommit(() => {
        order.push("first");
        // Read now, from another connection: on SQLite synchronously; on PostgreSQL sent before anything else.
        void settingKeys(f, "a-").then((keys) => seen.push(keys));
        // The transaction is over: what a callback does through the store is a statement of its own.
        callbackDb = store.db;
        callbackWrite = store.execute(`INSERT INTO settings (key, value) VALUES ($1, $2)`, ["a-callback", "1"]);
      });
      store.afterCommit(() => order.push("second"));
      expect(order).toEqual([]);
    });
    // By the time the transaction resolves its callbacks have run.
    expect(order).toEqual(["first", "second"]);
    await waitFor("the read of the first callback", () => seen.length === 1);
    expect(seen[0]).toContain("a-1");
    expect(callbackDb).toBe(outsideDb);
    await callbackWrite;
    expect(await settingKeys(f, "a-")).toEqual(["a-1", "a-callback"]);

    await store
      .transaction(async () => {
        store.afterCommit(() => order.push("rolled back"));
        throw new Error("no");
      })
      .catch(() => {});
    expect(order).toEqual(["first", "second"]);

    store.afterCommit(() => order.push("outside"));
    expect(order).toEqual(["first", "second", "outside"]);
  });
});

describe("beforeCommit", () => {
  test("runs inside the transaction, after everything its work did, before the commit; callbacks it adds run too", async () => {
    const f = await stores();
    const { store } = f;
    const { settings } = store.t;
    const order: string[] = [];
    let othersSaw: string[] | null = null;
    await store.transaction(async () => {
      await store.db.insert(settings).values({ key: "b-work", value: "1" });
      await store.beforeCommit(async () => {
        order.push("before 1");
        // Inside: it sees the work's writes, including those made after it was registered; nobody else does yet.
        expect((await store.query<{ key: string }>(sql`SELECT key FROM settings WHERE key LIKE 'b-%' ORDER BY key`)).map((r) => r.key)).toEqual(["b-later", "b-work"]);
        othersSaw = await settingKeys(f, "b-");
        await store.db.insert(settings).values({ key: "b-before", value: "1" });
        await store.beforeCommit(async () => void order.push("added by before 1"));
      });
      // Registered, not run: it runs once the work is done.
      expect(order).toEqual([]);
      await store.beforeCommit(async () => void order.push("before 2"));
      store.afterCommit(() => order.push("after commit"));
      await store.db.insert(settings).values({ key: "b-later", value: "1" });
      order.push("work done");
    });
    expect(order).toEqual(["work done", "before 1", "before 2", "added by before 1", "after commit"]);
    expect(othersSaw!).toEqual([]);
    expect(await settingKeys(f, "b-")).toEqual(["b-before", "b-later", "b-work"]);
  });

  test("a throw rolls the whole transaction back (its afterCommit callbacks dropped) and rejects it with that error", async () => {
    const f = await stores();
    const { store } = f;
    const { settings } = store.t;
    const order: string[] = [];
    const err = new Error("refused at commit");
    const failed = await store
      .transaction(async () => {
        await store.db.insert(settings).values({ key: "t-work", value: "1" });
        store.afterCommit(() => order.push("after commit"));
        await store.beforeCommit(async () => {
          await store.db.insert(settings).values({ key: "t-before", value: "1" });
          throw err;
        });
        return "work done";
      })
      .catch((e: unknown) => e);
    expect(failed).toBe(err);
    expect(order).toEqual([]);
    expect(await settingKeys(f, "t-")).toEqual([]);
  });

  test("outside a transaction: runs now, in a transaction of its own (all or nothing)", async () => {
    const f = await stores();
    const { store } = f;
    const { settings } = store.t;
    const order: string[] = [];
    await store.beforeCommit(async () => {
      await store.db.insert(settings).values({ key: "s-1", value: "1" });
      store.afterCommit(() => order.push("committed"));
      order.push("ran");
    });
    expect(order).toEqual(["ran", "committed"]);
    expect(await settingKeys(f, "s-")).toEqual(["s-1"]);
    const failed = await store
      .beforeCommit(async () => {
        await store.db.insert(settings).values({ key: "s-2", value: "1" });
        throw new Error("no");
      })
      .catch((e: Error) => e.message);
    expect(failed).toBe("no");
    expect(await settingKeys(f, "s-")).toEqual(["s-1"]);
  });
});

describe("exclusive", () => {
  test(`is a transaction, and runs one at a time${onPostgres ? " across instances (and against a store being opened)" : ""}`, async () => {
    const f = await stores();
    const a = f.store;
    const { b } = f;
    const { settings } = a.t;
    const failed = await a
      .exclusive(async () => {
        await a.db.insert(settings).values({ key: "x-lost", value: "1" });
        throw new Error("rolled back");
      })
      .catch((e: Error) => e.message);
    expect(failed).toBe("rolled back");

    const order: string[] = [];
    const held = gate();
    const entered = gate();
    const first = a.exclusive(async () => {
      order.push("a in");
      entered.open();
      await held.opened;
      await a.db.insert(settings).values({ key: "x-a", value: "1" });
      order.push("a out");
    });
    await entered.opened;
    const second = b.exclusive(async () => {
      order.push("b in");
      // The other one's writes are committed by the time this one holds the lock.
      order.push(`b sees ${(await b.query<{ key: string }>(sql`SELECT key FROM settings WHERE key LIKE 'x-%'`)).map((r) => r.key).join(",")}`);
    });
    // PostgreSQL: opening a store takes the startup lock too (migrations), so it waits as well.
    const opening = onPostgres ? openStore(f.where).then((s) => (cleanups.push(() => s.close()), order.push("opened"))) : null;
    await lockWaits(f, onPostgres ? 2 : 1);
    expect(order).toEqual(["a in"]);
    held.open();
    await Promise.all([first, second, opening]);
    expect(order.slice(0, 2)).toEqual(["a in", "a out"]);
    expect(order).toContain("b in");
    expect(order).toContain("b sees x-a");
    expect(await settingKeys(f, "x-")).toEqual(["x-a"]);
  });
});

describe("lockKey", () => {
  test(`transactions locking the same key run one after the other${onPostgres ? " across instances" : ""}; the lock ends with the transaction, committed or not`, async () => {
    const f = await stores();
    const a = f.store;
    const { b } = f;
    const order: string[] = [];
    const held = gate();
    const entered = gate();
    const first = a
      .transaction(async () => {
        await a.lockKey("k:same");
        order.push("a locked");
        entered.open();
        await held.opened;
        order.push("a done");
        throw new Error("rolled back");
      })
      .then(
        () => "committed",
        (err: Error) => err.message,
      );
    await entered.opened;
    const second = b.transaction(async () => {
      await b.lockKey("k:same");
      order.push("b locked");
    });
    await lockWaits(f);
    expect(order).toEqual(["a locked"]);
    held.open();
    // b's lock is granted by the rollback itself: whether a's caller or b runs first after it is not said.
    expect(await first).toBe("rolled back");
    await second;
    expect(order).toEqual(["a locked", "a done", "b locked"]);
  });

  test.if(onPostgres)("transactions locking different keys run side by side, across instances", async () => {
    const f = await stores();
    const a = f.store;
    const { b } = f;
    const held = gate();
    const entered = gate();
    const first = a.transaction(async () => {
      await a.lockKey("k:one");
      entered.open();
      await held.opened;
    });
    await entered.opened;
    // Completes while the first still holds its key (it would wait forever if the keys collided).
    await b.transaction(async () => {
      await b.lockKey("k:two");
      // A second lock of the key a transaction already holds does not wait for itself.
      await b.lockKey("k:two");
    });
    held.open();
    await first;
  });
});

/**
 * Text that COPY's text format must escape or could mistake for its markers, that an array literal must quote
 * (the unnest inserts bind each column as one array), and text that must not change.
 */
const awkward = [
  "tab\there",
  "line\nbreak",
  "carriage\rreturn\r\n",
  "back\\slash",
  "\\",
  "trailing backslash\\",
  "\\N",
  "\\\\N",
  "N",
  "\\t\\n\\r literally",
  "\\.",
  "\\.\n\\.",
  "",
  " ",
  "null",
  "NULL",
  "ünïcödé 日本語 עברית 🙂‍↔️ e\u0301",
  '{"json":"yes","nested":{"a":[1,"two\\"",null]},"tab":"\\t"}',
  "'quoted' \"double\" `back`; DROP TABLE request_logs; --",
  "\u0001\u0007\u000b\u000c\u001b\u007f control",
  "{",
  "}",
  "{a,b}",
  '{"NULL",NULL}',
  ",",
  '"',
  '\\"',
  "x".repeat(10_000),
];

describe("insertRequestLogs", () => {
  test("returns each row's seq, in the order of the rows, increasing from batch to batch; the rows are stored under them", async () => {
    const { store } = await stores();
    expect(await store.insertRequestLogs([])).toEqual([]);
    const first = Array.from({ length: 40 }, () => logRow("seq.test"));
    const second = Array.from({ length: 3 }, () => logRow("seq.test", { decision: "approval_pending", status: 202 }));
    const seqs1 = await store.insertRequestLogs(first);
    const seqs2 = await store.insertRequestLogs(second);
    const seqs = [...seqs1, ...seqs2];
    expect(seqs.length).toBe(43);
    for (let i = 1; i < seqs.length; i++) expect(seqs[i]!).toBeGreaterThan(seqs[i - 1]!);
    const stored = await logsOf(store, "seq.test");
    expect(stored.map((r) => [r.seq, r.id])).toEqual([...first, ...second].map((r, i) => [seqs[i]!, r.id]));
    expect(withoutSeq(stored)).toEqual([...first, ...second]);
  });

  test("rows land exactly as given: awkward text, nulls, empty strings, large numbers", async () => {
    const { store } = await stores();
    const rows = awkward.map((text, i) =>
      logRow("insert-awkward.test", {
        path: text,
        provider: text,
        matchedRuleName: i % 2 ? text : null,
        requestId: text,
        costNanos: i % 2 ? Number.MAX_SAFE_INTEGER - i : null,
        latencyMs: 2_147_483_647,
        decision: "approval_pending",
      }),
    );
    const seqs = await store.insertRequestLogs(rows);
    const stored = await logsOf(store, "insert-awkward.test");
    expect(stored.map((r) => r.seq)).toEqual(seqs);
    expect(withoutSeq(stored)).toEqual(rows);
  });

  test("all or nothing: a batch with one bad row stores none of its rows; the store goes on", async () => {
    const { store } = await stores();
    const bad = [logRow("bad-insert.test"), logRow("bad-insert.test", { method: null as unknown as string }), logRow("bad-insert.test")];
    await expect(store.insertRequestLogs(bad)).rejects.toThrow();
    expect(await logsOf(store, "bad-insert.test")).toEqual([]);
    const good = [logRow("bad-insert.test")];
    const [seq] = await store.insertRequestLogs(good);
    expect((await logsOf(store, "bad-insert.test")).map((r) => r.seq)).toEqual([seq!]);
  });
});

describe("appendRequestLogs", () => {
  test("rows land exactly as given: awkward text, nulls, empty strings, large numbers", async () => {
    const { store } = await stores();
    await store.appendRequestLogs([]);
    const rows = awkward.map((text, i) =>
      logRow("append.test", {
        path: `/p/${text}`,
        provider: text,
        method: i % 2 ? "POST" : text || "GET",
        matchedRuleName: text,
        requestId: i % 3 ? text : null,
        mcpServerId: i % 2 ? crypto.randomUUID() : null,
        costNanos: i % 2 ? Number.MAX_SAFE_INTEGER - i : i === 0 ? 0 : null,
        status: 599,
        latencyMs: 2_147_483_647,
        injectionCount: 0,
        matchedRuleLogicalId: i % 2 ? crypto.randomUUID() : null,
        approvalId: i % 2 ? crypto.randomUUID() : null,
      }),
    );
    rows.push(logRow("append.test", { provider: null, matchedRuleName: null, requestId: null, costNanos: null }));
    await store.appendRequestLogs(rows);
    const stored = await logsOf(store, "append.test");
    expect(withoutSeq(stored)).toEqual(rows);
  });

  test("all or nothing: a batch with one bad row stores none of its rows; the next batch is stored", async () => {
    const { store } = await stores();
    const bad = [logRow("bad-append.test"), logRow("bad-append.test"), logRow("bad-append.test", { host: null as unknown as string }), logRow("bad-append.test")];
    await expect(store.appendRequestLogs(bad)).rejects.toThrow();
    expect(await logsOf(store, "bad-append.test")).toEqual([]);
    // After a failed COPY the connection it used is fit for the next one.
    for (let i = 0; i < 3; i++) await store.appendRequestLogs([logRow("next.test", { path: "/a\tb" })]);
    expect((await logsOf(store, "next.test")).length).toBe(3);
  });

  test("a large batch (the queue kept through an outage) is stored whole", async () => {
    const { store } = await stores();
    const rows = Array.from({ length: 10_000 }, (_, i) => logRow("large.test", { path: `/${"p\t".repeat(100)}${i}`, matchedRuleName: i % 2 ? "rule\\name" : null }));
    await store.appendRequestLogs(rows);
    const held = Array.from({ length: 2_000 }, () => logRow("large.test", { decision: "approval_pending" }));
    const seqs = await store.insertRequestLogs(held);
    expect(new Set(seqs).size).toBe(2_000);
    const stored = await logsOf(store, "large.test");
    expect(stored.length).toBe(12_000);
    expect(withoutSeq([stored[0]!, stored[9_999]!, stored[10_000]!, stored[11_999]!])).toEqual([rows[0]!, rows[9_999]!, held[0]!, held[1_999]!]);
    expect(stored.slice(10_000).map((r) => r.seq)).toEqual(seqs);
  });

  test("batches appended concurrently are all stored whole, each row once", async () => {
    const { store } = await stores();
    const batches = Array.from({ length: 12 }, (_, b) => Array.from({ length: 50 }, () => logRow("concurrent.test", { requestId: `b${b}\t\\N` })));
    await Promise.all(batches.map((batch) => store.appendRequestLogs(batch)));
    const stored = await logsOf(store, "concurrent.test");
    expect(stored.length).toBe(600);
    expect(new Set(stored.map((r) => r.id)).size).toBe(600);
    expect(stored.every((r) => /^b\d+\t\\N$/.test(r.requestId!))).toBe(true);
  });
});

describe("insertSpendRecords", () => {
  test("rows land exactly as given (tokens and costs up to 2^53 - 1); an empty batch is nothing; a bad row stores none", async () => {
    const f = await stores();
    const { store } = f;
    await store.insertSpendRecords([]);
    const rows = [
      spendRow("gpt-ünï 🙂", { agentId: "agent-spend", inputTokens: 0, outputTokens: 0, costNanos: 0 }),
      spendRow("claude\t\\N", { agentId: "agent-spend", secretType: "llm_b", inputTokens: Number.MAX_SAFE_INTEGER, outputTokens: 4_294_967_297, costNanos: Number.MAX_SAFE_INTEGER - 1 }),
      spendRow("unknown", { agentId: "agent-spend" }),
      // The model can be the one the request named: anything an agent sends.
      ...awkward.map((model) => spendRow(model, { agentId: "agent-spend" })),
    ];
    await store.insertSpendRecords(rows);
    const t = store.t.spendRecords;
    const stored = await store.db.select().from(t).where(eq(t.agentId, "agent-spend")).orderBy(asc(t.seq));
    expect(withoutSeq(stored)).toEqual(rows);
    for (let i = 1; i < stored.length; i++) expect(stored[i]!.seq).toBeGreaterThan(stored[i - 1]!.seq);

    await expect(store.insertSpendRecords([spendRow("lost", { agentId: "agent-spend" }), spendRow(null as unknown as string, { agentId: "agent-spend" })])).rejects.toThrow();
    expect((await store.db.select().from(t).where(eq(t.agentId, "agent-spend"))).length).toBe(rows.length);
  });
});

describe("query and execute", () => {
  test("query: rows keyed by column name (aliases included), parameters bound; statements without rows return []", async () => {
    const { store } = await stores();
    expect(await store.query(sql`INSERT INTO settings (key, value) VALUES (${"q-1"}, ${"it's \"quoted\""})`)).toEqual([]);
    expect(await store.query(sql`SELECT key AS the_key, value, ${"bound"} AS param FROM settings WHERE key = ${"q-1"}`)).toEqual([{ the_key: "q-1", value: 'it\'s "quoted"', param: "bound" }]);
    expect(await store.query(sql`SELECT key FROM settings WHERE key = ${"none"}`)).toEqual([]);
  });

  test("execute: $1, $2, … bound in order of first use, a parameter reused, ten and more; values round-trip", async () => {
    const { store } = await stores();
    const many = Array.from({ length: 12 }, (_, i) => `v${i + 1}`);
    const cols = many.map((_, i) => `CAST($${i + 1} AS TEXT) AS c${i + 1}`).join(", ");
    expect(await store.execute(`SELECT ${cols}`, many)).toEqual([Object.fromEntries(many.map((v, i) => [`c${i + 1}`, v]))]);
    await store.execute(`INSERT INTO settings (key, value) VALUES ($1, $2), ($3, $2)`, ["e-1", "same ✓ 'x'", "e-2"]);
    const rows = await store.execute<{ key: string; value: string; again: string }>(`SELECT key, value, CAST($1 AS TEXT) AS again FROM settings WHERE key LIKE $2 AND value = $3 ORDER BY key`, ["e-", "e-%", "same ✓ 'x'"]);
    expect(rows).toEqual([
      { key: "e-1", value: "same ✓ 'x'", again: "e-" },
      { key: "e-2", value: "same ✓ 'x'", again: "e-" },
    ]);
    expect(await store.execute(`SELECT key FROM settings WHERE key = $1 OR value = $1`, ["none"])).toEqual([]);
  });

  test("the budget ledger's statements give the same numbers on both engines (upsert adding, casts, large sums)", async () => {
    const { store } = await stores();
    const { budgetId } = await budgetFixture(store);
    const start = 1_767_225_600;
    const upsert = (holder: string, spent: number, held: number) =>
      store.execute(
        `INSERT INTO budget_windows (budget_id, window_start, holder, spent_nanos, held_nanos, expires_at) VALUES ($1, CAST($2 AS BIGINT), $3, CAST($4 AS BIGINT), CAST($5 AS BIGINT), $6)
         ON CONFLICT (budget_id, window_start, holder) DO UPDATE SET spent_nanos = budget_windows.spent_nanos + excluded.spent_nanos, held_nanos = excluded.held_nanos, expires_at = excluded.expires_at`,
        [budgetId, start, holder, spent, held, "2099-01-01T00:00:00.000Z"],
      );
    await upsert("", 4_000_000_000_000_000, 0);
    await upsert("p1", 2_147_483_648, 5);
    await upsert("p1", 4_503_599_627_370_496, 7);
    await upsert("p2", 1, 9_000_000_000_000_000);
    const rows = await store.execute<{ holder: string; spent_nanos: number | string; held_nanos: number | string; window_start: number | string }>(
      `SELECT holder, spent_nanos, held_nanos, window_start FROM budget_windows WHERE budget_id = $1 AND window_start = $2 ORDER BY holder`,
      [budgetId, start],
    );
    expect(rows.map((r) => [r.holder, Number(r.spent_nanos), Number(r.held_nanos), Number(r.window_start)])).toEqual([
      ["", 4_000_000_000_000_000, 0, start],
      ["p1", 4_503_601_774_854_144, 7, start],
      ["p2", 1, 9_000_000_000_000_000, start],
    ]);
    const [sum] = await store.execute<{ spent: number | string }>(`SELECT sum(spent_nanos) AS spent FROM budget_windows WHERE budget_id = $1`, [budgetId]);
    expect(Number(sum!.spent)).toBe(8_503_601_774_854_145);
  });
});

/** An organization and a budget of it: budget_windows rows belong to a budget. */
async function budgetFixture(store: Store): Promise<{ budgetId: string }> {
  const now = new Date().toISOString();
  const organizationId = crypto.randomUUID();
  const budgetId = crypto.randomUUID();
  await store.db.insert(store.t.organizations).values({ id: organizationId, name: "Org", slug: `org-${organizationId}`, createdAt: now });
  await store.db.insert(store.t.scopeBudgets).values({
    id: budgetId,
    scope: "organization",
    organizationId,
    ownerId: organizationId,
    secretType: null,
    limitCents: 100,
    period: "total",
    alertPercents: [],
    createdAt: now,
    updatedAt: now,
  });
  return { budgetId };
}

describe("budget reservations (what the ledger's leases rely on)", () => {
  // The ledger decides in one transaction: lock the window, read its rows, write this process's row
  // (src/services/budgets/). Concurrent deciders, of two instances on PostgreSQL, must never reserve
  // more than the limit: exactly as many as fit are admitted. Locked by key (lockKey) or, as the ledger does,
  // by the window's opening row (lockBudgetWindows: SELECT … FOR UPDATE; SQLite transactions are serial).
  for (const lock of ["lockKey", "opening row"] as const) {
    test(`concurrent reservations${onPostgres ? " of two instances" : ""} locked by ${lock} never overshoot the limit`, async () => {
      const f = await stores();
      const instances = onPostgres ? [f.store, f.b] : [f.store];
      const { budgetId } = await budgetFixture(f.store);
      const start = 0;
      const estimate = 123_456_789_012;
      const opening = 5 * estimate;
      const limit = 15 * estimate + estimate / 2;
      await f.store.execute(`INSERT INTO budget_windows (budget_id, window_start, holder, spent_nanos, held_nanos, expires_at) VALUES ($1, CAST($2 AS BIGINT), '', CAST($3 AS BIGINT), 0, '')`, [budgetId, start, opening]);
      const reserve = (s: Store, holder: string) =>
        s.transaction(async () => {
          if (lock === "lockKey") await s.lockKey(`window:${budgetId}:${start}`);
          else await s.lockBudgetWindows([{ budgetId, start }]);
          const rows = await s.execute<{ spent_nanos: number | string; held_nanos: number | string }>(`SELECT spent_nanos, held_nanos FROM budget_windows WHERE budget_id = $1 AND window_start = $2`, [budgetId, start]);
          const used = rows.reduce((sum, r) => sum + Number(r.spent_nanos) + Number(r.held_nanos), 0);
          // A gap between the read and the write, where an unlocked decider would read the same total.
          await turns(2);
          if (used + estimate > limit) return false;
          await s.execute(
            `INSERT INTO budget_windows (budget_id, window_start, holder, spent_nanos, held_nanos, expires_at) VALUES ($1, CAST($2 AS BIGINT), $3, 0, CAST($4 AS BIGINT), $5)
             ON CONFLICT (budget_id, window_start, holder) DO UPDATE SET held_nanos = budget_windows.held_nanos + excluded.held_nanos`,
            [budgetId, start, holder, estimate, "2099-01-01T00:00:00.000Z"],
          );
          return true;
        });
      const decisions = await Promise.all(Array.from({ length: 24 }, (_, i) => reserve(instances[i % instances.length]!, `holder-${i % 3}`)));
      expect(decisions.filter(Boolean).length).toBe(10);
      const [total] = await f.committed<{ used: number | string }>(sql`SELECT sum(spent_nanos + held_nanos) AS used FROM budget_windows WHERE budget_id = ${budgetId}`);
      expect(Number(total!.used)).toBe(opening + 10 * estimate);
    });
  }
});

describe("lockBudgetWindows", () => {
  const open = (s: Store, budgetId: string, start: number) =>
    s.execute(`INSERT INTO budget_windows (budget_id, window_start, holder, spent_nanos, held_nanos, expires_at) VALUES ($1, CAST($2 AS BIGINT), '', 0, 0, '')`, [budgetId, start]);

  test(`a transaction locking a window another holds waits for its end${onPostgres ? " across instances" : ""}, whatever order it names its windows in; committed or not`, async () => {
    const f = await stores();
    const a = f.store;
    const { b } = f;
    const { budgetId } = await budgetFixture(a);
    const { budgetId: other } = await budgetFixture(a);
    for (const [id, start] of [[budgetId, 0], [budgetId, 1_800_000_000], [other, 0]] as const) await open(a, id, start);
    const order: string[] = [];
    const held = gate();
    const entered = gate();
    const first = a
      .transaction(async () => {
        await a.lockBudgetWindows([{ budgetId: other, start: 0 }, { budgetId, start: 1_800_000_000 }, { budgetId, start: 0 }]);
        order.push("a locked");
        entered.open();
        await held.opened;
        order.push("a done");
        throw new Error("rolled back");
      })
      .then(
        () => "committed",
        (err: Error) => err.message,
      );
    await entered.opened;
    const second = b.transaction(async () => {
      // A window without an opening row (never opened, or its budget deleted) is no error.
      await b.lockBudgetWindows([{ budgetId, start: 1_800_000_000 }, { budgetId: "no-such-budget", start: 0 }]);
      order.push("b locked");
    });
    await lockWaits(f);
    expect(order).toEqual(["a locked"]);
    held.open();
    // b's lock is granted by the rollback itself: whether a's caller or b runs first after it is not said.
    expect(await first).toBe("rolled back");
    await second;
    expect(order).toEqual(["a locked", "a done", "b locked"]);
  });

  test.if(onPostgres)("transactions locking other windows run side by side; many locking overlapping windows in any order never deadlock", async () => {
    const f = await stores();
    const { budgetId } = await budgetFixture(f.store);
    const { budgetId: other } = await budgetFixture(f.store);
    const windows = [
      { budgetId, start: 0 },
      { budgetId, start: 1_800_000_000 },
      { budgetId: other, start: 0 },
      { budgetId: other, start: 1_800_000_000 },
    ];
    for (const w of windows) await open(f.store, w.budgetId, w.start);
    const held = gate();
    const entered = gate();
    const first = f.store.transaction(async () => {
      await f.store.lockBudgetWindows([windows[0]!]);
      entered.open();
      await held.opened;
    });
    await entered.opened;
    // Completes while the first still holds its window.
    await f.b.transaction(() => f.b.lockBudgetWindows([windows[1]!, windows[3]!]));
    held.open();
    await first;
    // Each names the windows in another order: locked in one order, none waits on another in a circle.
    const orders = [[0, 1, 2, 3], [3, 2, 1, 0], [2, 0, 3, 1], [1, 3, 0, 2]];
    const runs = Array.from({ length: 16 }, (_, i) => {
      const s = i % 2 === 0 ? f.store : f.b;
      return s.transaction(async () => {
        await s.lockBudgetWindows(orders[i % orders.length]!.map((j) => windows[j]!));
        await turns(2);
      });
    });
    await Promise.all(runs);
  });

  test.if(onPostgres)("isRetryable: true for the deadlock victim, which can simply run again", async () => {
    const f = await stores();
    const aHolds = gate();
    const bHolds = gate();
    const run = (s: Store, mine: string, theirs: string, holding: ReturnType<typeof gate>, other: ReturnType<typeof gate>) =>
      s
        .transaction(async () => {
          await s.lockKey(mine);
          holding.open();
          await other.opened;
          await s.lockKey(theirs);
        })
        .then(
          () => null,
          (err: unknown) => err,
        );
    const outcomes = await Promise.all([run(f.store, "dl:one", "dl:two", aHolds, bHolds), run(f.b, "dl:two", "dl:one", bHolds, aHolds)]);
    const failed = outcomes.filter((e) => e !== null);
    expect(failed.length).toBe(1);
    expect(f.store.isRetryable(failed[0])).toBe(true);
  });

  test("isRetryable: false for an ordinary error", async () => {
    const { store } = await stores();
    let caught: unknown;
    await store.execute(`SELECT * FROM no_such_table`, []).catch((err: unknown) => (caught = err));
    expect(caught).toBeDefined();
    expect(store.isRetryable(caught)).toBe(false);
    expect(store.isRetryable(new Error("x"))).toBe(false);
  });
});

describe("notifier", () => {
  test.if(!onPostgres)("is null on SQLite (one process owns the file)", async () => {
    const { store } = await stores();
    expect(store.notifier).toBeNull();
  });

  /** Subscribes on `s`, unsubscribed when the test ends. */
  async function subscribe(s: Store, channel: string, onPayload: (p: string) => void, onReady: () => void = () => {}): Promise<() => Promise<void>> {
    const unsubscribe = await s.notifier!.subscribe(channel, onPayload, onReady);
    cleanups.push(unsubscribe);
    return unsubscribe;
  }

  test.if(onPostgres)("publish on one instance reaches a subscriber on another, exactly and in order; onReady runs once subscribed", async () => {
    const { store: a, b } = await stores();
    const got: string[] = [];
    let ready = 0;
    await subscribe(b, "credgate_events", (p) => got.push(p), () => ready++);
    expect(ready).toBe(1);
    const payloads = ['{"from":"x","event":{"kind":"agent"}}', "ünïcödé 🙂 'single' \"double\" \\ \t\n", "", "x".repeat(7000)];
    for (const p of payloads) await a.notifier!.publish("credgate_events", p);
    await waitFor("every notification", () => got.length >= payloads.length);
    expect(got).toEqual(payloads);
    // Channels are names of their own: case and punctuation kept, one channel's payloads never on another.
    const other: string[] = [];
    await subscribe(b, "Credgate.Other-Channel", (p) => other.push(p));
    await a.notifier!.publish("Credgate.Other-Channel", "o");
    await waitFor("the other channel's notification", () => other.length === 1);
    expect(other).toEqual(["o"]);
    expect(got.length).toBe(payloads.length);
    expect(ready).toBe(1);
  });

  test.if(onPostgres)("after unsubscribing nothing more is delivered, while other subscriptions go on", async () => {
    const { store: a, b } = await stores();
    const gone: string[] = [];
    const kept: string[] = [];
    const unsubscribe = await subscribe(b, "gone_channel", (p) => gone.push(p));
    await subscribe(b, "kept_channel", (p) => kept.push(p));
    await a.notifier!.publish("gone_channel", "before");
    await waitFor("the first notification", () => gone.length === 1);
    await unsubscribe();
    await a.notifier!.publish("gone_channel", "after");
    await a.notifier!.publish("kept_channel", "sentinel");
    // Notifications arrive in the order they were sent: once the sentinel is here, "after" would be too.
    await waitFor("the sentinel", () => kept.length === 1);
    expect(gone).toEqual(["before"]);
  });

  test.if(onPostgres)("when the server drops the LISTEN connection, onReady runs again after the reconnect, and delivery resumes", async () => {
    const f = await stores();
    const { store: a, b } = f;
    const got: string[] = [];
    let ready = 0;
    await subscribe(b, "reconnect_channel", (p) => got.push(p), () => ready++);
    expect(ready).toBe(1);
    // The session whose last statement subscribed to the channel: the LISTEN connection.
    const listeners = () => f.committed<{ pid: number }>(sql`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query ILIKE 'LISTEN%reconnect_channel%'`);
    const [listener] = await listeners();
    expect(listener).toBeDefined();
    const [terminated] = await f.committed<{ ok: boolean }>(sql`SELECT pg_terminate_backend(${listener!.pid}) AS ok`);
    expect(terminated!.ok).toBe(true);
    await waitFor("onReady after the reconnect", () => ready === 2);
    const [again] = await listeners();
    expect(again!.pid).not.toBe(listener!.pid);
    await a.notifier!.publish("reconnect_channel", "after reconnect");
    await waitFor("delivery after the reconnect", () => got.includes("after reconnect"));
    expect(got).toEqual(["after reconnect"]);
    expect(ready).toBe(2);
  });
});

/** A TCP relay in front of the PostgreSQL server: stopping it is the server going away, as the store sees it. */
async function relayTo(port: number): Promise<{ port: number; stop(): Promise<void>; start(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  let server: net.Server | null = null;
  const listen = (at: number) =>
    new Promise<number>((resolve, reject) => {
      const s = net.createServer((client) => {
        const upstream = net.connect({ host: "127.0.0.1", port });
        sockets.add(client).add(upstream);
        client.pipe(upstream).pipe(client);
        const end = () => (client.destroy(), upstream.destroy(), sockets.delete(client), sockets.delete(upstream));
        client.on("error", end).on("close", end);
        upstream.on("error", end).on("close", end);
      });
      s.once("error", reject);
      s.listen(at, "127.0.0.1", () => resolve((s.address() as net.AddressInfo).port));
      server = s;
    });
  const own = await listen(0);
  return {
    port: own,
    stop: () =>
      new Promise<void>((resolve) => {
        server!.close(() => resolve());
        for (const s of sockets) s.destroy();
        sockets.clear();
      }),
    start: async () => void (await listen(own)),
  };
}

describe("isUnavailable", () => {
  test("false for a constraint violation, a syntax error, and what is not an error", async () => {
    const { store } = await stores();
    await store.execute(`INSERT INTO settings (key, value) VALUES ($1, $2)`, ["u-1", "1"]);
    const duplicate = await store.execute(`INSERT INTO settings (key, value) VALUES ($1, $2)`, ["u-1", "1"]).catch((e: unknown) => e);
    expect(duplicate).toBeInstanceOf(Error);
    expect(store.isUnavailable(duplicate)).toBe(false);
    const syntax = await store.query(sql`SELEC 1`).catch((e: unknown) => e);
    expect(syntax).toBeInstanceOf(Error);
    expect(store.isUnavailable(syntax)).toBe(false);
    for (const v of [undefined, null, "ECONNREFUSED", new Error("ECONNREFUSED")]) expect(store.isUnavailable(v)).toBe(false);
  });

  test.if(onPostgres)("true when the server stops (connections dropped, then refused) or terminates the session; the store recovers when it is back", async () => {
    const f = await stores();
    const url = new URL(f.where.databaseUrl!);
    const relay = await relayTo(Number(url.port));
    cleanups.push(() => relay.stop());
    url.port = String(relay.port);
    // The store under test reaches the server through the relay; `f` watches the server directly.
    const store = await openStore({ dataDir: tempDir(), databaseUrl: url.toString() });
    cleanups.push(() => store.close());
    expect(await store.query(sql`SELECT 1 AS one`)).toEqual([{ one: 1 }]);

    // A statement running when the server goes away.
    const running = store.query(sql`SELECT pg_sleep(3)`).catch((e: unknown) => e);
    await waitFor("the statement to run", async () => (await f.committed<{ n: number }>(sql`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'SELECT pg_sleep(3)%'`))[0]!.n === 1);
    await relay.stop();
    const dropped = await running;
    expect(dropped).toBeInstanceOf(Error);
    expect(store.isUnavailable(dropped)).toBe(true);
    // The next statement finds nobody listening.
    const refused = await store.query(sql`SELECT 1`).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(Error);
    expect(store.isUnavailable(refused)).toBe(true);
    const inTransaction = await store.transaction(() => store.query(sql`SELECT 1`)).catch((e: unknown) => e);
    expect(store.isUnavailable(inTransaction)).toBe(true);

    await relay.start();
    await waitFor("the store to reconnect", async () => (await store.query(sql`SELECT 1 AS one`).catch(() => [])).length === 1);

    // A server shutting down terminates its sessions (57P01).
    const sleeping = store.query(sql`SELECT pg_sleep(5)`).catch((e: unknown) => e);
    let pid = 0;
    await waitFor("the statement to run", async () => {
      const [r] = await f.committed<{ pid: number }>(sql`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'SELECT pg_sleep(5)%'`);
      pid = r?.pid ?? 0;
      return pid !== 0;
    });
    await f.committed(sql`SELECT pg_terminate_backend(${pid})`);
    const terminated = await sleeping;
    expect(terminated).toBeInstanceOf(Error);
    expect(store.isUnavailable(terminated)).toBe(true);
  });

  test.if(onPostgres)("opening a store on a server that is not there fails with one line naming the host, never the password", async () => {
    const relay = await relayTo(1);
    await relay.stop();
    const failed = await openStore({ dataDir: tempDir(), databaseUrl: `postgres://credgate:s3cret-pw@127.0.0.1:${relay.port}/credgate` }).catch((e: Error) => e);
    expect(failed).toBeInstanceOf(Error);
    expect((failed as Error).message).toStartWith(`cannot reach PostgreSQL at 127.0.0.1:${relay.port} (CREDGATE_DATABASE_URL): `);
    expect((failed as Error).message).not.toContain("s3cret-pw");
  });
});

describe("close", () => {
  test("what was written is there when the database is opened again; the closed store takes no more statements", async () => {
    const f = await stores();
    const store = await f.another();
    await store.execute(`INSERT INTO settings (key, value) VALUES ($1, $2)`, ["cl-1", "1"]);
    await store.appendRequestLogs([logRow("close.test")]);
    await store.close();
    await expect(store.query(sql`SELECT 1`)).rejects.toThrow();
    const again = await openStore(f.where);
    cleanups.push(() => again.close());
    expect(await again.query(sql`SELECT key FROM settings WHERE key = 'cl-1'`)).toEqual([{ key: "cl-1" }]);
    expect((await logsOf(again, "close.test")).length).toBe(1);
  });

  test("a transaction open when close is called finishes first, and its writes are kept", async () => {
    const f = await stores();
    const store = await f.another();
    const held = gate();
    const entered = gate();
    const tx = store.transaction(async () => {
      await store.execute(`INSERT INTO settings (key, value) VALUES ($1, $2)`, ["cl-tx", "1"]);
      entered.open();
      await held.opened;
      await store.execute(`INSERT INTO settings (key, value) VALUES ($1, $2)`, ["cl-tx-2", "1"]);
    });
    await entered.opened;
    const closing = store.close();
    await turns();
    held.open();
    await tx;
    await closing;
    const again = await openStore(f.where);
    cleanups.push(() => again.close());
    expect(await again.query(sql`SELECT key FROM settings WHERE key LIKE 'cl-tx%' ORDER BY key`)).toEqual([{ key: "cl-tx" }, { key: "cl-tx-2" }]);
  });

  test.if(onPostgres)("leaves no session behind on the server: its connections and its LISTEN connection end", async () => {
    const f = await stores();
    const c = await openStore(f.where);
    cleanups.push(() => c.close());
    await c.notifier!.subscribe("close_channel", () => {}, () => {});
    const [mine] = await c.query<{ pid: number }>(sql`SELECT pg_backend_pid() AS pid`);
    const [listener] = await f.committed<{ pid: number }>(sql`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query ILIKE 'LISTEN%close_channel%'`);
    expect(listener).toBeDefined();
    await c.close();
    const pids = [mine!.pid, listener!.pid];
    await waitFor("the store's sessions to end", async () => (await f.committed(sql`SELECT pid FROM pg_stat_activity WHERE pid IN (${pids[0]}, ${pids[1]})`)).length === 0);
  });
});
