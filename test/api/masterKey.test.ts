// The master key and the data it seals stay together (issue 17), on either store: the core opens only with the
// key the data was sealed with, reads without writing for `keys`/`run`, and a store with no data may get a new key.
import { describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { loadConfig } from "../../src/runtime/config.ts";
import { log } from "../../src/observability/log.ts";
import { NoDataError, openCore } from "../../src/server.ts";
import { takeUnprintedKeys } from "../../src/services/bootstrap.ts";
import { storeEnvFor } from "../support/process.ts";
import { tempDir } from "../support/tmp.ts";

async function configFor(dataDir: string, env: Record<string, string> = {}) {
  log.setQuiet(true);
  return loadConfig({ dataDir, port: 0, gatewayPort: 0 }, { ...(await storeEnvFor(dataDir)), ...env });
}

describe("openCore and the master key", () => {
  test("a second open with the same key finds the same bootstrap; a wrong key is refused before anything is written", async () => {
    const dataDir = tempDir();
    const config = await configFor(dataDir);
    const first = await openCore(config);
    const keys = first.bootstrap;
    const settingsBefore = await first.store.query(sql`SELECT key, value FROM settings ORDER BY key`);
    expect(settingsBefore.map((r) => r.key)).toContain("master_key_check");
    await first.close();

    const wrong = await configFor(dataDir, { CREDGATE_MASTER_KEY: randomBytes(32).toString("base64") });
    const expected = config.databaseUrl
      ? "master key does not match the data in the database: set CREDGATE_MASTER_KEY to the key the database was created with"
      : `master key does not match the data in ${dataDir}: restore ${join(dataDir, "master.key")} or set CREDGATE_MASTER_KEY`;
    await expect(openCore(wrong)).rejects.toThrow(expected);
    await expect(openCore(wrong, { readOnly: true })).rejects.toThrow(expected);

    const again = await openCore(config, { readOnly: true });
    expect(again.bootstrap).toEqual(keys);
    expect(await again.store.query(sql`SELECT key, value FROM settings ORDER BY key`)).toEqual(settingsBefore);
    await again.close();
  });

  test("a read-only open of a store without data is a NoDataError and creates nothing", async () => {
    const dataDir = join(tempDir(), "absent");
    const config = await configFor(dataDir);
    await expect(openCore(config, { readOnly: true })).rejects.toBeInstanceOf(NoDataError);
    expect(existsSync(dataDir)).toBe(false);
  });

  test("the first serving start takes the unprinted-keys mark; no later one does", async () => {
    const config = await configFor(tempDir());
    const core = await openCore(config);
    expect(await takeUnprintedKeys(core.services)).toBe(true);
    expect(await takeUnprintedKeys(core.services)).toBe(false);
    await core.close();
    const reopened = await openCore(config);
    expect(await takeUnprintedKeys(reopened.services)).toBe(false);
    await reopened.close();
  });
});
