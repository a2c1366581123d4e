// Where the SSH CA lives (docs/ssh.md#host-certificates), beside the gateway CA: with the embedded store,
// `ssh-ca.key` (0600) in the data dir; with PostgreSQL, one sealed settings row shared by every instance.
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { SshCertificateAuthority } from "../crypto/sshCertificate.ts";
import type { ServiceDeps } from "./deps.ts";

const KEY = "gateway_ssh_ca";
/** One load per process and store (the API and the gateway of a process share it). */
const loaded = new WeakMap<ServiceDeps, Promise<SshCertificateAuthority>>();

export function loadSshCa(deps: ServiceDeps): Promise<SshCertificateAuthority> {
  let ca = loaded.get(deps);
  if (!ca) {
    ca = read(deps);
    loaded.set(deps, ca);
    ca.catch(() => loaded.delete(deps));
  }
  return ca;
}

async function read(deps: ServiceDeps): Promise<SshCertificateAuthority> {
  if (deps.store.engine === "sqlite") {
    const file = join(deps.config.dataDir, "ssh-ca.key");
    if (!existsSync(file)) {
      // `wx`: two processes starting together keep the first key written.
      try {
        writeFileSync(file, SshCertificateAuthority.generate(), { mode: 0o600, flag: "wx" });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      }
      chmodSync(file, 0o600);
    }
    return SshCertificateAuthority.load(readFileSync(file, "utf8"));
  }
  const { settings } = deps.store.t;
  const get = async () => {
    const [row] = await deps.store.db.select().from(settings).where(eq(settings.key, KEY)).limit(1);
    return row ? deps.sealer.open(row.value) : null;
  };
  let pem = await get();
  if (pem === null) {
    await deps.store.db.insert(settings).values({ key: KEY, value: deps.sealer.seal(SshCertificateAuthority.generate()) }).onConflictDoNothing();
    pem = (await get())!;
  }
  return SshCertificateAuthority.load(pem);
}
