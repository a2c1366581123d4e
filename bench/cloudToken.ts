// What a minted cloud token costs per request (docs/cloud-identities.md#minting): a GCS-shaped object read through
// the gateway with a Google service-account secret (the agent's placeholder Bearer replaced by the token the gateway
// minted once and holds in its cache) against the same read with a plain header secret, in one run, rows taking
// turns. The goal: the minted row within 5 % of the header row. Run: `bun bench/cloudToken.ts [--duration 5]`.
import { generateKeyPairSync } from "node:crypto";
import { startBenchEnv, GCS_HOST } from "./env.ts";
import { requestOnce, stats, type LoadResult, type Target } from "./load.ts";
import { killAll, reapAll, runClient } from "./procs.ts";

const seconds = Number(process.argv[process.argv.indexOf("--duration") + 1]) || 5;
const CONNECTIONS = 32;
const ROUNDS = 3;
const PATH = "/storage/v1/b/bench/o/object.json?alt=media";
const MINTED = "ya29.bench-minted-token-0123456789abcdef";

async function main(): Promise<void> {
  const env = await startBenchEnv({ log: (m) => process.stderr.write(`· ${m}\n`) });
  const key = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs8", format: "pem" }).toString();
  const value = JSON.stringify({ type: "service_account", project_id: "bench", private_key_id: "b1", private_key: key, client_email: "bench@bench.iam.gserviceaccount.com", token_uri: `https://${GCS_HOST}:${env.mitm.port}/token` });
  const created = await env.credgate.api("POST", "/v1/secrets", { body: { name: "bench gcp", type: "generic", value, hostPattern: GCS_HOST, injectionConfig: { gcpServiceAccount: {} } } });
  if (created.status !== 201) throw new Error(`creating the gcpServiceAccount secret failed: ${created.status} ${created.text}`);
  const gcs: Target = { host: GCS_HOST, port: env.mitm.port, caFile: env.gatewayCaFile, proxy: env.mitm.proxy, headers: { authorization: "Bearer credgate-managed-gcp" } };
  // The minted token must really reach the upstream (the first request mints it).
  const probe = await requestOnce(gcs, "/echo");
  const expected = new Bun.CryptoHasher("sha256").update(`Bearer ${MINTED}`).digest("hex");
  if (probe.status !== 200 || (JSON.parse(probe.body) as { authorizationSha256: string }).authorizationSha256 !== expected) throw new Error(`minted-token check failed: ${probe.status} ${probe.body}`);
  process.stderr.write("· verified: the upstream received the minted token\n");
  const load = (t: Target) =>
    runClient<LoadResult>({ task: "load", connections: CONNECTIONS, warmupMs: 1000, durationMs: seconds * 1000, path: PATH, watch: { gateway: env.credgate.proc.pid! }, ...t });
  const header: LoadResult[] = [];
  const minted: LoadResult[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    header.push(await load(env.mitm));
    minted.push(await load(gcs));
  }
  const cpuUs = (r: LoadResult) => ((r.cpu.gateway ?? NaN) / 100) * (1e6 / r.rps);
  const median = (xs: number[]) => stats(xs).p50;
  const h = median(header.map((r) => r.rps));
  const m = median(minted.map((r) => r.rps));
  const errors = [...header, ...minted].reduce((n, r) => n + r.errors, 0);
  console.log(`GCS-shaped GET ${PATH}, ${CONNECTIONS} connections, ${ROUNDS} rounds of ${seconds} s each, rows taking turns (median req/s):`);
  console.log(`  header secret  ${Math.round(h)} req/s   p50 ${median(header.map((r) => r.latencyMs.p50)).toFixed(3)} ms   gateway ${median(header.map(cpuUs)).toFixed(0)} µs cpu/req`);
  console.log(`  minted token   ${Math.round(m)} req/s   p50 ${median(minted.map((r) => r.latencyMs.p50)).toFixed(3)} ms   gateway ${median(minted.map(cpuUs)).toFixed(0)} µs cpu/req`);
  console.log(`  minted / header: ${((m / h) * 100).toFixed(1)} % (goal ≥ 95 %)   errors ${errors}   rounds: header ${header.map((r) => Math.round(r.rps)).join(", ")}; minted ${minted.map((r) => Math.round(r.rps)).join(", ")}`);
}

main()
  .catch((err) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(async () => {
    killAll();
    await reapAll();
  });
