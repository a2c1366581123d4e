// Where the gateway CA lives (docs/gateway.md#certificates): with the embedded store, `ca.pem` + `ca.key` in the data dir;
// with PostgreSQL, one sealed settings row shared by every instance, created by whichever starts first.
import { eq } from "drizzle-orm";
import { CertificateAuthority, type CaMaterial } from "../crypto/ca.ts";
import type { ServiceDeps } from "./deps.ts";

const KEY = "gateway_ca";

export async function loadGatewayCa(deps: ServiceDeps): Promise<CertificateAuthority> {
  if (deps.store.engine === "sqlite") return CertificateAuthority.loadOrCreate(deps.config.dataDir);
  const { settings } = deps.store.t;
  const read = async () => {
    const [row] = await deps.store.db.select().from(settings).where(eq(settings.key, KEY)).limit(1);
    return row ? (JSON.parse(deps.sealer.open(row.value)) as CaMaterial) : null;
  };
  let material = await read();
  if (!material) {
    const fresh = await CertificateAuthority.generate();
    // Two instances starting together: the first insert wins and both read it back.
    await deps.store.db.insert(settings).values({ key: KEY, value: deps.sealer.seal(JSON.stringify(fresh)) }).onConflictDoNothing();
    material = (await read())!;
  }
  return CertificateAuthority.load(material);
}
