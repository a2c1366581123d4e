import { test } from "bun:test";
import { readFileSync } from "node:fs";
import { startBroker } from "../test/support/databaseBroker.ts";
import { run } from "../test/support/gateway.ts";

const cpu = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(f[11]) + Number(f[12])) * 10_000; // µs (clock ticks 100/s)
};

test("pgbench cpu", async () => {
  if (process.env.PROF) process.env.CREDGATE_TEST_BINARY = import.meta.dir + "/cg-prof.sh";
  const b = await startBroker({ env: { CREDGATE_GATEWAY_WORKERS: "1" } });
  await b.secret("bench", { user: "scram", tls: "off" });
  await b.db.admin("GRANT CREATE ON SCHEMA public TO scram_user");
  const direct = b.db.connectUrl("scram", { sslmode: "disable" });
  await run(["pgbench", "-i", "-s", "1", direct], { timeoutMs: 120000 });
  const via = b.url("bench", { sslmode: "disable" });
  for (const mode of (process.env.MODES ?? "simple,extended,prepared").split(",")) {
    const pid = b.cg.proc.pid;
    const before = cpu(pid);
    const t = 20000;
    const r = await run(["pgbench", "-S", "-M", mode, "-c", "8", "-j", "2", "-t", String(t / 8), "-n", via], { timeoutMs: 120000 });
    const used = cpu(pid) - before;
    console.log(mode, "credgate µs/tx", (used / t).toFixed(1), "tps", /tps = ([\d.]+)/.exec(r.stdout)?.[1], r.stderr.slice(-200));
  }
  await b.stop();
}, 300000);
