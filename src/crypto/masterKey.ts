// The master key: CREDGATE_MASTER_KEY, else `<data dir>/master.key`. Reading never writes: a new key is made
// only when the store holds no data yet (services/masterKeyCheck.ts decides), so a data dir and its key stay
// together and a lost or wrong key is refused instead of replaced.
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { randomBytes } from "node:crypto";

export const MASTER_KEY_FILE = "master.key";

/** The configured key, or the data dir's; null when there is neither. */
export function readMasterKey(dataDir: string, fromEnv: string | null): Buffer | null {
  if (fromEnv !== null) return Buffer.from(fromEnv, "base64");
  const file = join(dataDir, MASTER_KEY_FILE);
  if (!existsSync(file)) return null;
  const key = Buffer.from(readFileSync(file, "utf8").trim(), "base64");
  if (key.length !== 32) throw new Error(`${file} does not hold a base64 32-byte key: restore the file from a backup or set CREDGATE_MASTER_KEY`);
  return key;
}

/** A new random key in `<data dir>/master.key` (0600); never replaces an existing file. */
export function createMasterKey(dataDir: string): Buffer {
  const file = join(dataDir, MASTER_KEY_FILE);
  const key = randomBytes(32);
  writeFileSync(file, key.toString("base64") + "\n", { mode: 0o600, flag: "wx" });
  chmodSync(file, 0o600);
  return key;
}

/** The one line a start gets when the key cannot open the data it is given. */
export function masterKeyMismatch(where: { dataDir: string; databaseUrl: string | null }): Error {
  if (where.databaseUrl) return new Error("master key does not match the data in the database: set CREDGATE_MASTER_KEY to the key the database was created with");
  return new Error(`master key does not match the data in ${where.dataDir}: restore ${join(where.dataDir, MASTER_KEY_FILE)} or set CREDGATE_MASTER_KEY`);
}
