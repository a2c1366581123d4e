// Secret-store values through the real gateway (docs/injection.md#secret-stores, docs/injection.md#command-references):
// a real credgate process reads `cmd://` references by running a real command (a shell script that counts its runs
// in a file and fails while a flag file exists), injects the value into requests curl and raw TLS clients send to
// a real TLS upstream, and keeps it for CREDGATE_STORE_CACHE_SECONDS once for the instance: with two gateway
// processes (tunnels placed on both, checked with `ss`), 20 concurrent requests run the command once. A store outage
// within the cache time is invisible; after it the request gets 502 credential_unavailable naming the secret, never
// the command's output. A value with a line break cannot go into a header: 502 at request time. Once read, the
// value is known to the guards: the agent sending it to another host → 403 credential_leak_blocked, an upstream
// echoing it → redacted. The test endpoint reads once, bypassing the cache. CREDGATE_SECRET_COMMANDS in cloud mode
// → exit 1 naming it.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gatewayCa, until, resolveEntries, run } from "../support/gateway.ts";
import { openProcessTunnel, roundsOnEveryTunnel, tunnelsOnEveryProcess } from "../support/processTunnels.ts";
import { runCli, startCredgate, type RunningCredgate } from "../support/process.ts";
import { makePki, startUpstream, type TestPki, type TestUpstream } from "../support/upstream.ts";

const HOST = "api.store.test";
const OTHER = "api.elsewhere.test";
const VALUE = `sk_store_${crypto.randomUUID().replace(/-/g, "")}`;
const LEAKY_VALUE = `sk_leaky_${crypto.randomUUID().replace(/-/g, "")}`;
const TESTED_VALUE = `sk_tested_${crypto.randomUUID().replace(/-/g, "")}`;
const SHORT_VALUE = `sk_short_${crypto.randomUUID().replace(/-/g, "")}`;

let dir: string;
let pki: TestPki;
let up: TestUpstream;
let multi: RunningCredgate;
let short: RunningCredgate;
let multiCa: { pem: string; file: string };
let shortCa: { pem: string; file: string };

/** How many times the command ran for `key`. */
const runs = (key: string): number => (existsSync(join(dir, `count-${key}`)) ? readFileSync(join(dir, `count-${key}`), "utf8").split("\n").filter(Boolean).length : 0);
const failing = (key: string, on: boolean) => (on ? writeFileSync(join(dir, `fail-${key}`), "") : existsSync(join(dir, `fail-${key}`)) && unlinkSync(join(dir, `fail-${key}`)));

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "credgate-stores-"));
  const script = join(dir, "store.sh");
  // Counts every run; while fail-<key> exists, writes the value to stderr (which must never be shown) and exits 7.
  writeFileSync(
    script,
    `#!/bin/sh\necho run >> "${dir}/count-$1"\nif [ -e "${dir}/fail-$1" ]; then cat "${dir}/value-$1" >&2; exit 7; fi\nprintf '%s\\n' "$(cat "${dir}/value-$1")"\n`,
  );
  chmodSync(script, 0o755);
  writeFileSync(join(dir, "value-stripe"), VALUE);
  writeFileSync(join(dir, "value-outage"), `  ${VALUE}-outage  `);
  writeFileSync(join(dir, "value-multiline"), "first-line\nsecond-line");
  writeFileSync(join(dir, "value-short"), SHORT_VALUE);
  writeFileSync(join(dir, "value-leaky"), LEAKY_VALUE);
  const commands: Record<string, string[]> = Object.fromEntries(["stripe", "outage", "multiline", "short", "tested", "leaky"].map((k) => [k, [script, k]]));
  // What a command sees of credgate's environment: nothing of its own settings (CREDGATE_*), the rest as it is.
  commands.env = ["sh", "-c", 'printf "%s|%s|%s" "${CREDGATE_SECRET_COMMANDS:-none}" "${CREDGATE_STORE_CACHE_SECONDS:-none}" "${STORE_TEST_MARKER:-none}"'];
  writeFileSync(join(dir, "value-tested"), TESTED_VALUE);
  pki = makePki([HOST, OTHER]);
  up = startUpstream(pki);
  const base = {
    CREDGATE_UPSTREAM_CA_FILE: pki.caFile,
    CREDGATE_RESOLVE: resolveEntries([HOST, OTHER], up.port),
    CREDGATE_SECRET_COMMANDS: JSON.stringify(commands),
    STORE_TEST_MARKER: "passed-on",
  };
  [multi, short] = await Promise.all([
    startCredgate({ env: { ...base, CREDGATE_GATEWAY_WORKERS: "2", CREDGATE_STORE_CACHE_SECONDS: "600" } }),
    startCredgate({ env: { ...base, CREDGATE_STORE_CACHE_SECONDS: "1" } }),
  ]);
  [multiCa, shortCa] = await Promise.all([gatewayCa(multi), gatewayCa(short)]);
}, 60_000);

afterAll(async () => {
  await multi?.stop();
  await short?.stop();
  await up?.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function storeSecret(on: RunningCredgate, name: string, storeRef: string, pathPattern: string, hostPattern = HOST): Promise<string> {
  const r = await on.api("POST", "/v1/secrets", {
    body: { name, type: "generic", valueSource: "vault", storeRef, hostPattern, pathPattern, injectionConfig: { headerName: "authorization", valueFormat: "Bearer {value}" } },
  });
  if (r.status !== 201) throw new Error(`create secret: ${r.status} ${r.text}`);
  expect(r.body.preview).toBeUndefined();
  return r.body.id;
}

/** curl through the gateway (CONNECT + MITM) as the default agent. */
async function curl(on: RunningCredgate, ca: string, url: string, extra: string[] = []): Promise<{ status: number; body: string }> {
  const proxy = `http://x:${on.keys.defaultAgentToken}@127.0.0.1:${on.gatewayPort}`;
  const r = await run(["curl", "-sS", "--proxy", proxy, "--cacert", ca, "-H", "Authorization: Bearer credgate-managed", ...extra, "-w", "\n%{http_code}", url]);
  expect(r.stderr).toBe("");
  const cut = r.stdout.lastIndexOf("\n");
  return { status: Number(r.stdout.slice(cut + 1)), body: r.stdout.slice(0, cut) };
}

const at = (path: string, host = HOST) => `https://${host}:${up.port}${path}`;
const seenAt = (path: string) => up.seen.filter((s) => s.url === path);

/** A CONNECT tunnel to `host` through `multi` with TLS inside, and the gateway process that holds it. */
const tunnel = (host = HOST) => openProcessTunnel(multi.gatewayPort, multi.keys.defaultAgentToken, multiCa.pem, host, up.port);
/** Tunnels until each of the two gateway processes holds at least `each` (and `total` are open). */
const tunnelsOnBoth = (host: string, each: number, total: number) => tunnelsOnEveryProcess(() => tunnel(host), 2, each, total);

describe("two gateway processes share one store cache", () => {
  test("20 concurrent requests over both processes run the command once; later requests take the cached value; an outage within the cache time is invisible", async () => {
    await storeSecret(multi, "Outage", "cmd://outage", "/outage/*");
    const tunnels = await tunnelsOnBoth(HOST, 3, 20);
    try {
      const { round: everywhere, paths } = roundsOnEveryTunnel(tunnels, "/outage/");
      await everywhere();
      expect(runs("outage")).toBe(1);
      await everywhere();
      expect(runs("outage")).toBe(1);
      // The store fails from now on: within the cache time nobody notices.
      failing("outage", true);
      await everywhere();
      expect(runs("outage")).toBe(1);
      // The trimmed standard output is the value.
      for (const path of paths) expect(seenAt(path)[0]?.headers.authorization).toBe(`Bearer ${VALUE}-outage`);
      expect(multi.output()).not.toContain(VALUE);
    } finally {
      failing("outage", false);
      for (const t of tunnels) t.close();
    }
  }, 90_000);

  test("the test endpoint reads once, bypassing the cache, and never answers the value", async () => {
    const id = await storeSecret(multi, "Tested", "cmd://tested", "/tested/*");
    expect((await curl(multi, multiCa.file, at("/tested/1"))).status).toBe(200);
    expect(runs("tested")).toBe(1);
    const r = await multi.api("POST", `/v1/secrets/${id}/test`);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ ok: true, message: `Read a value of ${TESTED_VALUE.length} characters from the store.` });
    expect(r.text).not.toContain(TESTED_VALUE);
    expect(runs("tested")).toBe(2);
    failing("tested", true);
    try {
      const failed = await multi.api("POST", `/v1/secrets/${id}/test`);
      expect(failed.body).toEqual({ ok: false, message: `The command for "tested" exited with status 7; it wrote ${TESTED_VALUE.length} characters to standard error (not shown).` });
      // The cached value still serves the gateway.
      expect((await curl(multi, multiCa.file, at("/tested/2"))).status).toBe(200);
      expect(seenAt("/tested/2")[0]!.headers.authorization).toBe(`Bearer ${TESTED_VALUE}`);
    } finally {
      failing("tested", false);
    }
  });
});

describe("the guards know a store value once read", () => {
  test("an upstream echoing the value: redacted in what the agent gets", async () => {
    await storeSecret(multi, "Stripe", "cmd://stripe", "/stripe/*");
    const r = await curl(multi, multiCa.file, at("/stripe/echo"));
    expect(r.status).toBe(200);
    expect(seenAt("/stripe/echo")[0]!.headers.authorization).toBe(`Bearer ${VALUE}`);
    expect(r.body).not.toContain(VALUE);
    expect(r.body).toContain("credgate-redacted");
  });

  test("the agent sending the value to another host: 403 credential_leak_blocked, nothing forwarded — on both gateway processes", async () => {
    // The value is read through the primary process only (the worker never asks for it): the worker must refuse it too.
    await storeSecret(multi, "Leaky", "cmd://leaky", "/leaky/*");
    const reads = await tunnelsOnBoth(HOST, 1, 2);
    const onPrimary = reads.find((t) => t.pid === multi.proc.pid)!;
    expect((await onPrimary.get("/leaky/1")).status).toBe(200);
    expect(seenAt("/leaky/1")[0]!.headers.authorization).toBe(`Bearer ${LEAKY_VALUE}`);
    for (const t of reads) t.close();
    const tunnels = await tunnelsOnBoth(OTHER, 2, 4);
    try {
      let i = 0;
      for (const t of tunnels) {
        const path = `/leak/${i++}`;
        const r = await t.get(path, [`x-copy: ${LEAKY_VALUE}`]);
        expect({ pid: t.pid === multi.proc.pid ? "primary" : "worker", status: r.status }).toEqual({ pid: t.pid === multi.proc.pid ? "primary" : "worker", status: 403 });
        expect(r.body).toMatchObject({ error: "credential_leak_blocked", secret_name: "Leaky" });
        expect(seenAt(path)).toHaveLength(0);
      }
    } finally {
      for (const t of tunnels) t.close();
    }
    const body = await curl(multi, multiCa.file, at("/leak/body", OTHER), ["--data-binary", `token=${VALUE}`]);
    expect(body.status).toBe(403);
    expect(seenAt("/leak/body")).toHaveLength(0);
  });
});

describe("values that cannot be used", () => {
  test("a value with a line break: 502 at request time naming the secret, nothing forwarded", async () => {
    await storeSecret(multi, "Multiline", "cmd://multiline", "/multiline/*");
    const r = await curl(multi, multiCa.file, at("/multiline/1"));
    expect(r.status).toBe(502);
    expect(JSON.parse(r.body)).toEqual({
      error: "credential_unavailable",
      message:
        `credgate could not obtain the credential for ${HOST}, so the request was not forwarded. ` +
        "The value in the secret store cannot be sent in an HTTP header: it must contain only printable ASCII characters (no line breaks, control or non-ASCII characters).",
      secret_name: "Multiline",
    });
    expect(seenAt("/multiline/1")).toHaveLength(0);
    expect(multi.output()).toContain('"storeRef":"cmd://multiline","reason":"not_printable_ascii"');
    expect(multi.output()).not.toContain("second-line");
  });

  test("after the cache time a failing store → 502 naming the secret, never the command's output; a recovered store serves again", async () => {
    await storeSecret(short, "Short", "cmd://short", "/short/*");
    expect((await curl(short, shortCa.file, at("/short/1"))).status).toBe(200);
    failing("short", true);
    try {
      const refused = await until(async () => {
        const r = await curl(short, shortCa.file, at(`/short/x${Date.now()}`));
        if (r.status !== 502) throw new Error(`still ${r.status}`);
        return r;
      });
      expect(JSON.parse(refused.body)).toEqual({
        error: "credential_unavailable",
        message: `credgate could not obtain the credential for ${HOST}, so the request was not forwarded.`,
        secret_name: "Short",
      });
      expect(refused.body).not.toContain(SHORT_VALUE);
      expect(short.output()).toContain('"storeRef":"cmd://short","reason":"command_failed"');
      expect(short.output()).not.toContain(SHORT_VALUE);
    } finally {
      failing("short", false);
    }
    await until(async () => {
      const r = await curl(short, shortCa.file, at("/short/back"));
      if (r.status !== 200) throw new Error(`still ${r.status}`);
    });
    expect(seenAt("/short/back").at(-1)!.headers.authorization).toBe(`Bearer ${SHORT_VALUE}`);
  });
});

describe("the command's environment", () => {
  test("credgate's own settings (CREDGATE_*) are not passed to a command; the rest of its environment is", async () => {
    await storeSecret(short, "Env", "cmd://env", "/env/*");
    expect((await curl(short, shortCa.file, at("/env/1"))).status).toBe(200);
    expect(seenAt("/env/1")[0]!.headers.authorization).toBe("Bearer none|none|passed-on");
  });
});

describe("cloud mode", () => {
  test("CREDGATE_SECRET_COMMANDS set → the process exits 1 naming it", async () => {
    const data = mkdtempSync(join(tmpdir(), "credgate-cloud-cmd-"));
    try {
      const r = await runCli(["serve", "--mode", "cloud", "--data-dir", data, "--port", "0", "--gateway-port", "0", "--host", "127.0.0.1"], {
        CREDGATE_SECRET_COMMANDS: '{"x":["/bin/echo","sk_never_shown"]}',
      });
      expect(r.code).toBe(1);
      expect(r.stderr + r.stdout).toContain("CREDGATE_SECRET_COMMANDS is for self-hosted instances and is refused in cloud mode");
      expect(r.stderr + r.stdout).not.toContain("sk_never_shown");
    } finally {
      rmSync(data, { recursive: true, force: true });
    }
  });
});
