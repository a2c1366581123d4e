// The benchmark environment: an openssl PKI for the upstream, the upstream process, the real credgate
// process (from source) with a secret injected for the upstream, the gateway CA, and the three ways to
// reach the upstream. Shared by bench/gateway.ts and bench/anatomy.ts.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { startDnsServer } from "../test/support/dnsServer.ts";
import { startCredgate, type RunningCredgate } from "../test/support/process.ts";
import { tempDir } from "../test/support/tmp.ts";
import { makePki, type TestPki } from "../test/support/upstream.ts";
import { requestOnce, type Target } from "./load.ts";
import { onCleanup, startServer } from "./procs.ts";

export const HOST = "bench.example.com";
/** The LLM scenario's host: an llm_a secret applies there, so POST /v1/messages is metered (docs/budgets.md#metering). */
export const LLM_HOST = "llm.bench.example.com";
/** No secret applies to this host: the agent sends its own header, so neither injection nor the echo guard runs. */
export const PLAIN_HOST = "plain.bench.example.com";
/** Not pinned: resolved through the bench's own DNS server (CREDGATE_DNS_SERVERS, TTL 300 s, docs/operations.md#dns). */
export const DNS_HOST = "dns.bench.example.com";
export const SECRET_VALUE = "bench-secret-4f1c2a9e";
/** A placeholder secret applies here (docs/injection.md#placeholders): the agent writes PLACEHOLDER, the upstream gets SECRET_VALUE. */
export const PH_HOST = "ph.bench.example.com";
export const PLACEHOLDER = "CG_BENCH_PLACEHOLDER";
/** An awsSigV4 secret applies here (region and service set on it): every request is signed again (docs/injection.md#aws-signature-v4). */
export const SIGV4_HOST = "s3.bench.example.com";
export const SIGV4_KEY_ID = "AKIABENCHMARK0000001";
/** A Google service-account secret applies here: the gateway mints a token at the upstream's /token (bench/cloudToken.ts). */
export const GCS_HOST = "gcs.bench.example.com";
/** A secret whose value a `cmd://` reference reads (docs/injection.md#secret-stores): bench/storeValue.ts. */
export const STORE_HOST = "store.bench.example.com";
/** The command behind it: prints SECRET_VALUE, no shell (read once, then cached for the run). */
export const STORE_COMMANDS = JSON.stringify({ "bench-value": ["printf", "%s", "bench-secret-4f1c2a9e"] });

export interface UpstreamEnv {
  pki: TestPki;
  upstream: Awaited<ReturnType<typeof startServer>>;
  /** Straight to the upstream, sending the header the gateway would inject (same upstream work). */
  direct: Target;
  /** Requests answered and distinct connections seen by the upstream so far. */
  upstreamStats(): Promise<{ requests: number; connections: number }>;
}

export interface GatewayEnv {
  credgate: RunningCredgate;
  gatewayCaFile: string;
  /** CONNECT bench.example.com through the gateway, which dials it pinned by CREDGATE_RESOLVE. */
  mitm: Target;
  /** CONNECT 127.0.0.1 through the gateway: no pin, the gateway's plain outbound fetch path. */
  mitmIp: Target;
  /** CONNECT dns.bench.example.com: not pinned, resolved through the bench's DNS server and cached. */
  mitmDns: Target;
  /** CONNECT llm.bench.example.com: an llm_a key is injected and POST /v1/messages is metered. */
  llm: Target;
  /** CONNECT plain.bench.example.com: no credential, the agent's own header passes (what credentials cost). */
  uncredentialed: Target;
  /** CONNECT ph.bench.example.com with `Authorization: Bearer <placeholder>`: substituted by the gateway. */
  placeholder: Target;
  /** CONNECT s3.bench.example.com: the agent's SigV4 request (placeholder key) is signed again with the real key. */
  sigv4: Target;
}

export type BenchEnv = UpstreamEnv & GatewayEnv;

export interface GatewayOptions {
  /** Run credgate under Bun's CPU profiler, writing profiles to this directory on exit. */
  profileDir?: string;
  /** Candidate fixes to swap in at run time (bench/anatomy/whatif.ts), e.g. ["pinned-session"]. */
  whatIf?: string[];
  /** Gateway processes (CREDGATE_GATEWAY_WORKERS); one unless said. */
  workers?: number;
  /** More environment for credgate (OTEL_* for the traced row, CREDGATE_LEAK_GUARD=off for the leak guard's). */
  env?: Record<string, string>;
  log?: (msg: string) => void;
}

export async function startUpstreamEnv(log: (msg: string) => void = () => {}): Promise<UpstreamEnv> {
  log("making the upstream PKI (openssl)");
  const pki = makePki([HOST, LLM_HOST, PLAIN_HOST, DNS_HOST, PH_HOST, SIGV4_HOST, GCS_HOST, STORE_HOST, "127.0.0.1"]);
  const upstream = await startServer("upstream.ts", [pki.certFile, pki.keyFile]);
  log(`upstream on 127.0.0.1:${upstream.port} (pid ${upstream.proc.pid})`);
  const direct: Target = { host: HOST, port: upstream.port, caFile: pki.caFile, headers: { authorization: `Bearer ${SECRET_VALUE}` } };
  return {
    pki,
    upstream,
    direct,
    upstreamStats: async () => JSON.parse((await requestOnce(direct, "/stats")).body) as { requests: number; connections: number },
  };
}

/** The real credgate process (from source) with a secret for the upstream, checked end to end. */
export async function startGateway(up: UpstreamEnv, opts: GatewayOptions = {}): Promise<GatewayEnv> {
  const log = opts.log ?? (() => {});
  const bunOptions = [
    ...(opts.profileDir ? ["--cpu-prof", "--cpu-prof-md", `--cpu-prof-dir=${opts.profileDir}`] : []),
    ...(opts.whatIf?.length ? ["--preload", join(import.meta.dir, "anatomy/whatif.ts")] : []),
  ];
  const dns = await startDnsServer({ [DNS_HOST]: { addresses: ["127.0.0.1"], ttl: 300 } });
  onCleanup(() => void dns.stop());
  const credgate = await startCredgate({
    env: {
      CREDGATE_GATEWAY_WORKERS: String(opts.workers ?? 1),
      CREDGATE_DNS_SERVERS: dns.address,
      CREDGATE_UPSTREAM_CA_FILE: up.pki.caFile,
      CREDGATE_RESOLVE: [HOST, LLM_HOST, PLAIN_HOST, PH_HOST, SIGV4_HOST, GCS_HOST, STORE_HOST].map((h) => `${h}:${up.upstream.port}:127.0.0.1`).join(","),
      // A store value read once for the whole run: the cache outlives every row.
      CREDGATE_SECRET_COMMANDS: STORE_COMMANDS,
      CREDGATE_STORE_CACHE_SECONDS: "86400",
      ...(bunOptions.length ? { BUN_OPTIONS: bunOptions.join(" ") } : {}),
      ...(opts.whatIf?.length ? { BENCH_WHATIF: opts.whatIf.join(",") } : {}),
      ...opts.env,
    },
  });
  onCleanup(() => {
    if (credgate.proc.exitCode === null) credgate.proc.kill("SIGTERM");
  });
  log(`credgate gateway on ${credgate.gatewayUrl} (pid ${credgate.proc.pid})${opts.whatIf?.length ? ` with what-if ${opts.whatIf.join(", ")}` : ""}`);

  // One secret for the pinned name, one for the IP literal, one for the DNS name (docs/injection.md#secrets create body).
  for (const hostPattern of [HOST, "127.0.0.1", DNS_HOST]) {
    const created = await credgate.api("POST", "/v1/secrets", {
      body: {
        name: `bench ${hostPattern}`,
        type: "generic",
        value: SECRET_VALUE,
        hostPattern,
        injectionConfig: { headerName: "authorization", valueFormat: "Bearer {value}" },
      },
    });
    if (created.status !== 201) throw new Error(`creating the secret for ${hostPattern} failed: ${created.status} ${created.text}`);
  }

  const ph = await credgate.api("POST", "/v1/secrets", { body: { name: "bench placeholder", type: "generic", value: SECRET_VALUE, hostPattern: PH_HOST, injectionConfig: { placeholder: PLACEHOLDER } } });
  if (ph.status !== 201) throw new Error(`creating the placeholder secret failed: ${ph.status} ${ph.text}`);

  const aws = await credgate.api("POST", "/v1/secrets", {
    body: { name: "bench aws", type: "generic", value: "bench/aws/secret/access/key/0123456789", hostPattern: SIGV4_HOST, injectionConfig: { awsSigV4: { accessKeyId: SIGV4_KEY_ID, region: "us-east-1", service: "s3" } } },
  });
  if (aws.status !== 201) throw new Error(`creating the awsSigV4 secret failed: ${aws.status} ${aws.text}`);

  const llmKey = await credgate.api("POST", "/v1/secrets", { body: { name: "bench llm", type: "llm_a", value: "sk-ant-api03-bench", hostPattern: LLM_HOST } });
  if (llmKey.status !== 201) throw new Error(`creating the llm_a secret failed: ${llmKey.status} ${llmKey.text}`);

  const caRes = await fetch(`${credgate.gatewayUrl}/v1/gateway/ca`);
  const caPem = await caRes.text();
  if (!caRes.ok || !caPem.includes("BEGIN CERTIFICATE")) throw new Error(`gateway CA not served: ${caRes.status} ${caPem.slice(0, 200)}`);
  const gatewayCaFile = join(tempDir("credgate-bench-"), "gateway-ca.pem");
  writeFileSync(gatewayCaFile, caPem);

  const proxy = { host: "127.0.0.1", port: credgate.gatewayPort, token: credgate.keys.defaultAgentToken };
  const mitm: Target = { host: HOST, port: up.upstream.port, caFile: gatewayCaFile, proxy };
  const mitmIp: Target = { host: "127.0.0.1", port: up.upstream.port, caFile: gatewayCaFile, proxy };
  const mitmDns: Target = { host: DNS_HOST, port: up.upstream.port, caFile: gatewayCaFile, proxy };

  // The injected header must really reach the upstream (the agent sends none).
  for (const t of [mitm, mitmIp, mitmDns]) {
    const probe = await requestOnce(t, "/echo");
    const seen = probe.status === 200 ? (JSON.parse(probe.body) as { authorizationSha256: string | null }) : null;
    const expected = new Bun.CryptoHasher("sha256").update(`Bearer ${SECRET_VALUE}`).digest("hex");
    if (seen?.authorizationSha256 !== expected) throw new Error(`injection check for CONNECT ${t.host} failed: ${probe.status} ${probe.body}`);
  }
  log("verified: the upstream received the injected Authorization header through the MITM path");
  const llm: Target = { host: LLM_HOST, port: up.upstream.port, caFile: gatewayCaFile, proxy, headers: { "x-api-key": "credgate-managed" } };
  // A header of the same size whose value is no secret's (a secret's value would be refused by the leak guard, docs/guards.md#credential-leak-guard).
  const uncredentialed: Target = { host: PLAIN_HOST, port: up.upstream.port, caFile: gatewayCaFile, proxy, headers: { authorization: `Bearer ${"x".repeat(SECRET_VALUE.length)}` } };
  const placeholder: Target = { host: PH_HOST, port: up.upstream.port, caFile: gatewayCaFile, proxy, headers: { authorization: `Bearer ${PLACEHOLDER}` } };
  const probe = await requestOnce(placeholder, "/echo");
  const expected = new Bun.CryptoHasher("sha256").update(`Bearer ${SECRET_VALUE}`).digest("hex");
  if (probe.status !== 200 || (JSON.parse(probe.body) as { authorizationSha256: string }).authorizationSha256 !== expected) {
    throw new Error(`placeholder check failed: ${probe.status} ${probe.body}`);
  }
  log("verified: the upstream received the placeholder's value");
  // What an AWS SDK sends with placeholder credentials: its own SigV4 header, date and payload-hash mode.
  const sigv4: Target = {
    host: SIGV4_HOST,
    port: up.upstream.port,
    caFile: gatewayCaFile,
    proxy,
    headers: {
      authorization: `AWS4-HMAC-SHA256 Credential=AKIAPLACEHOLDER00000/20250101/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=${"0".repeat(64)}`,
      "x-amz-date": "20250101T000000Z",
      "x-amz-content-sha256": "UNSIGNED-PAYLOAD",
    },
  };
  const signedProbe = await requestOnce(sigv4, "/echo");
  const keyIdDigest = signedProbe.status === 200 ? (JSON.parse(signedProbe.body) as { authorizationKeyIdSha256: string | null }).authorizationKeyIdSha256 : null;
  if (keyIdDigest !== new Bun.CryptoHasher("sha256").update(SIGV4_KEY_ID).digest("hex")) throw new Error(`SigV4 check for CONNECT ${SIGV4_HOST} failed: ${signedProbe.status} ${signedProbe.body}`);
  log("verified: the upstream received a SigV4 signature made with the real key id");
  return { credgate, gatewayCaFile, mitm, mitmIp, mitmDns, llm, uncredentialed, placeholder, sigv4 };
}

/**
 * `count` more secrets in the project, each for a host of its own, with values the credential leak guard watches
 * (docs/guards.md#credential-leak-guard): what a project with many secrets costs every request.
 */
export async function addWatchedSecrets(credgate: RunningCredgate, count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    const created = await credgate.api("POST", "/v1/secrets", {
      body: { name: `bench watched ${i}`, type: "generic", value: `sk-watched-${i}-${crypto.randomUUID()}`, hostPattern: `watched-${i}.bench.example.com`, injectionConfig: { headerName: "x-api-key" } },
    });
    if (created.status !== 201) throw new Error(`creating watched secret ${i} failed: ${created.status} ${created.text}`);
  }
}

export async function startBenchEnv(opts: GatewayOptions = {}): Promise<BenchEnv> {
  const up = await startUpstreamEnv(opts.log);
  return { ...up, ...(await startGateway(up, opts)) };
}
