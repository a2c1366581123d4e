// Which instance this process is, among those sharing one database: a uuid kept in `<data dir>/instance-id`,
// so a restart is the same instance (and cancels what its previous life held). Not a secret.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export const INSTANCE_ID_FILE = "instance-id";
const UUID = /^[0-9a-f-]{36}$/;

export function loadInstanceId(dataDir: string): string {
  const file = join(dataDir, INSTANCE_ID_FILE);
  if (existsSync(file)) {
    const id = readFileSync(file, "utf8").trim();
    if (UUID.test(id)) return id;
  }
  const id = crypto.randomUUID();
  writeFileSync(file, id + "\n", { mode: 0o600 });
  return id;
}
