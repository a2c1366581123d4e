import { test } from "bun:test";
import { startBroker } from "../test/support/databaseBroker.ts";
import { run } from "../test/support/gateway.ts";

test("pgbench", async () => {
  const b = await startBroker({ env: { CREDGATE_GATEWAY_WORKERS: "1" } });
  await b.secret("bench", { user: "scram", tls: "off" });
  await b.db.admin("GRANT CREATE ON SCHEMA public TO scram_user");
  const direct = b.db.connectUrl("scram", { sslmode: "disable" });
  console.log(await run(["pgbench", "-i", "-s", "1", direct], { timeoutMs: 120000 }).then((r) => r.stderr.slice(-200)));
  const via = b.url("bench", { sslmode: "disable" });
  for (const [name, url] of [["direct", direct], ["credgate", via], ["direct", direct], ["credgate", via]]) {
    const r = await run(["pgbench", "-S", "-c", "8", "-j", "2", "-T", "8", "-n", url!], { timeoutMs: 60000 });
    console.log(name, /tps = ([\d.]+)/.exec(r.stdout)?.[1], r.stderr.slice(-300));
  }
  await b.stop();
}, 300000);
