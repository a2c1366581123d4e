// Transactions of the store, on the engine under test: statements of other requests never run inside an open
// transaction (on SQLite they share one connection), a rolled-back transaction loses only its own writes,
// services called inside a transaction join it, and change events wait for the commit.
import { describe, expect, test } from "bun:test";
import { eq, sql } from "drizzle-orm";
import { createTestApi } from "../support/app.ts";

describe("store transactions", () => {
  test("a concurrent write is not swept into another request's transaction, and survives its rollback", async () => {
    const api = await createTestApi();
    const { store } = api.core;
    const { settings } = store.t;
    let inside!: () => void;
    const entered = new Promise<void>((r) => (inside = r));
    let release!: () => void;
    const hold = new Promise<void>((r) => (release = r));
    const tx = store
      .transaction(async () => {
        await store.db.insert(settings).values({ key: "tx-own", value: "1" });
        inside();
        await hold; // an await gap: other requests run now
        throw new Error("roll back");
      })
      .catch((err: Error) => err.message);
    await entered;
    // Another request writes while the transaction is open: it must wait, not join it.
    // (`.then` starts it now: drizzle queries run when first awaited.)
    const outside = store.db
      .insert(settings)
      .values({ key: "tx-outside", value: "1" })
      .then(() => "written");
    await Bun.sleep(20);
    release();
    expect(await tx).toBe("roll back");
    expect(await outside).toBe("written");
    const keys = (await store.db.select({ key: settings.key }).from(settings)).map((r) => r.key);
    expect(keys).toContain("tx-outside");
    expect(keys).not.toContain("tx-own");
  });

  test("services called inside a transaction join it: all or nothing", async () => {
    const api = await createTestApi();
    const { store, services } = api.core;
    const owner = { scope: "project" as const, projectId: api.projectId, organizationId: api.organizationId };
    const failed = await store
      .transaction(async () => {
        await services.secrets.create(owner, { name: "joined", type: "generic", value: "v-joined", hostPattern: "j.example.com", injectionConfig: { headerName: "x-j" } });
        await services.agents.create(api.projectId, { name: "Joined", identifier: "joined", mode: "grants" });
        throw new Error("abort");
      })
      .catch((err: Error) => err.message);
    expect(failed).toBe("abort");
    expect((await services.secrets.listForProject(api.projectId, api.organizationId)).some((s) => s.name === "joined")).toBe(false);
    expect(await services.agents.findByIdentifier(api.projectId, "joined")).toBeUndefined();
  });

  test("change events of a transaction are delivered after it commits, and not at all after a rollback", async () => {
    const api = await createTestApi();
    const { store, services } = api.core;
    const seen: string[] = [];
    services.deps.events.on((e) => {
      if (e.kind === "agent") seen.push(e.agentId);
    });
    let createdId = "";
    await store.transaction(async () => {
      createdId = (await services.agents.create(api.projectId, { name: "Evented", identifier: "evented", mode: "grants" })).id;
      expect(seen).toEqual([]);
    });
    expect(seen).toEqual([createdId]);
    await store
      .transaction(async () => {
        await services.agents.create(api.projectId, { name: "Dropped", identifier: "dropped", mode: "grants" });
        throw new Error("no");
      })
      .catch(() => {});
    expect(seen).toEqual([createdId]);
  });

  test("many concurrent transactions each keep their own writes (no interleaving)", async () => {
    const api = await createTestApi();
    const { store } = api.core;
    const { settings } = store.t;
    await Promise.all(
      Array.from({ length: 25 }, (_, i) =>
        store.transaction(async () => {
          await store.db.insert(settings).values({ key: `n-${i}`, value: "0" });
          await Bun.sleep(1);
          await store.db.update(settings).set({ value: String(i) }).where(eq(settings.key, `n-${i}`));
        }),
      ),
    );
    const rows = await store.query<{ key: string; value: string }>(sql`SELECT key, value FROM settings WHERE key LIKE 'n-%'`);
    expect(rows.length).toBe(25);
    for (const r of rows) expect(r.value).toBe(r.key.slice(2));
  });
});
