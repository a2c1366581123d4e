// What a value read from a secret store costs per request (docs/injection.md#secret-stores): the same GET through the
// gateway with a header secret whose value a `cmd://` reference reads (once; then from the instance's cache, an
// await-free peek on the hot path) against the bench's inline header secret, in one run, rows taking turns. The
// goal: the store row within 3 % of the inline row. Run alone: `bun bench/storeValue.ts [--duration 5]`;
// `npm run bench` runs it after the placeholder rows.
import { SECRET_VALUE, STORE_HOST, startBenchEnv, type BenchEnv } from "./env.ts";
import { requestOnce, stats, type LoadResult, type Target } from "./load.ts";
import { killAll, reapAll, runClient } from "./procs.ts";

export const STORE_VALUE_GOAL = 0.97;
const ROUNDS = 3;

export interface StoreValueRows {
  inline: LoadResult[];
  store: LoadResult[];
}

/** The store secret on the bench's credgate, its target, checked: the upstream gets the value the command prints. */
export async function storeTarget(env: Pick<BenchEnv, "credgate" | "mitm">): Promise<Target> {
  const created = await env.credgate.api("POST", "/v1/secrets", {
    body: { name: "bench store", type: "generic", valueSource: "vault", storeRef: "cmd://bench-value", hostPattern: STORE_HOST, injectionConfig: { headerName: "authorization", valueFormat: "Bearer {value}" } },
  });
  if (created.status !== 201) throw new Error(`creating the store secret failed: ${created.status} ${created.text}`);
  const target: Target = { ...env.mitm, host: STORE_HOST };
  const probe = await requestOnce(target, "/echo");
  const expected = new Bun.CryptoHasher("sha256").update(`Bearer ${SECRET_VALUE}`).digest("hex");
  if (probe.status !== 200 || (JSON.parse(probe.body) as { authorizationSha256: string }).authorizationSha256 !== expected) {
    throw new Error(`store value check failed: ${probe.status} ${probe.body}`);
  }
  return target;
}

/** Rounds taking turns: the inline header secret, then the store-valued one. */
export async function storeValueRounds(run: (t: Target) => Promise<LoadResult>, inline: Target, store: Target, rounds = ROUNDS): Promise<StoreValueRows> {
  const out: StoreValueRows = { inline: [], store: [] };
  for (let i = 0; i < rounds; i++) {
    out.inline.push(await run(inline));
    out.store.push(await run(store));
  }
  return out;
}

export function printStoreValue(r: StoreValueRows): void {
  const median = (xs: number[]) => stats(xs).p50;
  const cpuUs = (x: LoadResult) => ((x.cpu.gateway ?? NaN) / 100) * (1e6 / x.rps);
  const i = median(r.inline.map((x) => x.rps));
  const s = median(r.store.map((x) => x.rps));
  const errors = [...r.inline, ...r.store].reduce((n, x) => n + x.errors, 0);
  const ratio = s / i;
  console.log("");
  console.log(`Secret-store value (cmd://, cached) vs inline header secret, ${r.inline.length} rounds taking turns (median req/s):`);
  console.log(`  inline secret  ${Math.round(i)} req/s   p50 ${median(r.inline.map((x) => x.latencyMs.p50)).toFixed(3)} ms   gateway ${median(r.inline.map(cpuUs)).toFixed(0)} µs cpu/req`);
  console.log(`  store value    ${Math.round(s)} req/s   p50 ${median(r.store.map((x) => x.latencyMs.p50)).toFixed(3)} ms   gateway ${median(r.store.map(cpuUs)).toFixed(0)} µs cpu/req`);
  console.log(
    `  store / inline: ${(ratio * 100).toFixed(1)} % (goal ≥ ${STORE_VALUE_GOAL * 100} %) ${ratio >= STORE_VALUE_GOAL ? "PASS" : "MISS"}   errors ${errors}   rounds: inline ${r.inline.map((x) => Math.round(x.rps)).join(", ")}; store ${r.store.map((x) => Math.round(x.rps)).join(", ")}`,
  );
}

if (import.meta.main) {
  const seconds = Number(process.argv[process.argv.indexOf("--duration") + 1]) || 5;
  const connections = 32;
  try {
    const env = await startBenchEnv({ log: (m) => process.stderr.write(`· ${m}\n`) });
    const store = await storeTarget(env);
    process.stderr.write("· verified: the upstream received the value the command printed\n");
    const run = (t: Target) => runClient<LoadResult>({ task: "load", connections, warmupMs: 1000, durationMs: seconds * 1000, path: "/", watch: { gateway: env.credgate.proc.pid! }, ...t });
    printStoreValue(await storeValueRounds(run, env.mitm, store));
  } catch (err) {
    console.error(err);
    process.exitCode = 1;
  } finally {
    killAll();
    await reapAll();
  }
}
