// The master key: CREDGATE_MASTER_KEY, else `<data dir>/master.key` (created 0600 on first start).
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { randomBytes } from "node:crypto";

export function loadMasterKey(dataDir: string, fromEnv: string | null): Buffer {
  if (fromEnv !== null) return Buffer.from(fromEnv, "base64");
  const file = join(dataDir, "master.key");
  if (existsSync(file)) {
    const key = Buffer.from(readFileSync(file, "utf8").trim(), "base64");
    if (key.length !== 32) throw new Error(`${file} does not hold a base64 32-byte key`);
    return key;
  }
  const key = randomBytes(32);
  writeFileSync(file, key.toString("base64") + "\n", { mode: 0o600, flag: "wx" });
  chmodSync(file, 0o600);
  return key;
}
