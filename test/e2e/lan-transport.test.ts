// TLS to credgate itself on a LAN (docs/operations.md#tls): advertised https:// proxy URLs that `credgate run` and the
// container config hand out, with CA settings that cover the proxy hop (curl, Node fetch and https, Python
// requests, git clone — each injected through a relay that must see only TLS); the API port over HTTPS from a
// PEM pair (renewed without a restart while a client polls) or from the gateway CA; the plain-HTTP warning.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash, X509Certificate } from "node:crypto";
import { copyFileSync, existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as tls from "node:tls";
import { closeCleanPages, launchBrowser, openPage, signIn } from "../support/browser.ts";
import { makeGitRemote, type GitRemote } from "../support/gitHttp.ts";
import { basic, resolveEntries, untilTrue } from "../support/gateway.ts";
import { freePort } from "../support/ports.ts";
import { credgateCommand, runCli, startCredgate, storeEnvFor, type RunningCredgate } from "../support/process.ts";
import { startCaptureRelay, type CaptureRelay } from "../support/relay.ts";
import { tempDir } from "../support/tmp.ts";
import { makePki, startUpstream, type TestUpstream } from "../support/upstream.ts";

const HOST = "api.lan.test";
const GIT_HOST = "git.lan.test";
const SECRET = `lan-secret-${crypto.randomUUID()}`;

async function runVia(cg: RunningCredgate, cmd: string[], env: Record<string, string> = {}) {
  const proc = Bun.spawn([...credgateCommand(), "run", "--", ...cmd], {
    env: { ...process.env, CREDGATE_URL: cg.apiUrl, CREDGATE_API_KEY: cg.keys.projectApiKey, ...env },
    cwd: tempDir(),
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { code, stdout, stderr };
}

describe("advertised https:// proxy URLs (docs/operations.md#tls): credgate run and the container config", () => {
  let cg: RunningCredgate;
  let up: TestUpstream;
  let relay: CaptureRelay;
  let git: GitRemote;
  const url = () => `https://${HOST}:${up.port}`;

  beforeAll(async () => {
    const pki = makePki([HOST, GIT_HOST]);
    up = startUpstream(pki);
    git = makeGitRemote();
    up.handle(git.handler);
    const gatewayPort = await freePort();
    // Agents reach the gateway through the relay: it is the network between them, and it keeps what it saw.
    relay = await startCaptureRelay(gatewayPort);
    cg = await startCredgate({
      gatewayPort,
      env: {
        CREDGATE_UPSTREAM_CA_FILE: pki.caFile,
        CREDGATE_RESOLVE: resolveEntries([HOST, GIT_HOST], up.port),
        CREDGATE_GATEWAY_URL: `https://127.0.0.1:${relay.port}`,
        CREDGATE_CONTAINER_GATEWAY_HOST: `host.docker.internal:${gatewayPort}`,
      },
    });
    for (const host of [HOST, GIT_HOST]) {
      const r = await cg.api("POST", "/v1/secrets", {
        body: { name: `bearer ${host}`, type: "generic", value: SECRET, hostPattern: host, injectionConfig: { headerName: "authorization", valueFormat: "Bearer {value}" } },
      });
      expect(r.status).toBe(201);
    }
  });

  afterAll(async () => {
    await cg?.stop();
    await up?.stop();
    relay?.close();
  });

  /** The request reached the upstream with the secret, and the hop to the gateway carried only TLS. */
  function expectInjectedOverTls(path: string) {
    const hits = up.seen.filter((s) => s.url === path);
    expect(hits.length).toBe(1);
    expect(hits[0]!.headers.authorization).toBe(`Bearer ${SECRET}`);
    const token = cg.keys.defaultAgentToken;
    const all = relay.all();
    for (const needle of [token, SECRET, basic(token).split(" ")[1]!, HOST]) expect(all.includes(Buffer.from(needle))).toBe(false);
    for (const conn of relay.sent) if (conn.length > 0) expect(conn[0]![0]).toBe(0x16);
  }

  test("GET /v1/gateway-url and /v1/container-config hand out https:// proxy URLs and the git proxy CA", async () => {
    expect((await cg.api("GET", "/v1/gateway-url")).body).toEqual({ url: `https://127.0.0.1:${relay.port}` });
    const config = (await cg.api("GET", "/v1/container-config")).body;
    const proxy = `https://x:${cg.keys.defaultAgentToken}@host.docker.internal:${cg.gatewayPort}`;
    for (const name of ["HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"]) expect(config.env[name]).toBe(proxy);
    expect(config.env.GIT_PROXY_SSL_CAINFO).toBe(config.caCertificateContainerPath);
    expect(config.env.NODE_EXTRA_CA_CERTS).toBe(config.caCertificateContainerPath);
    expect(config.env.REQUESTS_CA_BUNDLE).toBe(config.caCertificateContainerPath);
  });

  test("the child's environment: https:// proxy to the advertised host, one CA bundle for every runtime and the proxy hop", async () => {
    const r = await runVia(cg, ["node", "-e", "console.log(JSON.stringify(process.env))"]);
    expect(r.code).toBe(0);
    const env = JSON.parse(r.stdout);
    expect(env.HTTPS_PROXY).toBe(`https://x:${cg.keys.defaultAgentToken}@127.0.0.1:${relay.port}`);
    for (const name of ["SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO", "GIT_PROXY_SSL_CAINFO"]) expect(env[name]).toBe(env.SSL_CERT_FILE);
  });

  test("credgate run -- curl", async () => {
    const path = `/curl/${crypto.randomUUID()}`;
    const r = await runVia(cg, ["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", url() + path]);
    expect(r.stderr).toBe("");
    expect(r.stdout).toBe("200");
    expectInjectedOverTls(path);
  });

  test("credgate run -- node: fetch and the https module", async () => {
    const viaFetch = `/node-fetch/${crypto.randomUUID()}`;
    const viaHttps = `/node-https/${crypto.randomUUID()}`;
    const script = `
      fetch("${url() + viaFetch}").then((r) => {
        console.log(r.status);
        require("https").get("${url() + viaHttps}", (res) => { res.resume(); res.on("end", () => console.log(res.statusCode)); });
      });`;
    const r = await runVia(cg, ["node", "-e", script]);
    expect(r.stderr).toBe("");
    expect(r.stdout.trim().split("\n")).toEqual(["200", "200"]);
    expectInjectedOverTls(viaFetch);
    expectInjectedOverTls(viaHttps);
  });

  test("credgate run -- python3 (requests: TLS to the proxy, then TLS inside it)", async () => {
    const path = `/python/${crypto.randomUUID()}`;
    const r = await runVia(cg, ["python3", "-c", `import requests; print(requests.get("${url() + path}").status_code)`]);
    expect(r.stderr).toBe("");
    expect(r.stdout.trim()).toBe("200");
    expectInjectedOverTls(path);
  });

  test("credgate run -- git clone over smart HTTP", async () => {
    const dir = tempDir();
    const before = up.seen.length;
    const r = await runVia(cg, ["git", "clone", "-q", `https://${GIT_HOST}:${up.port}/${git.name}.git`, join(dir, "clone")]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(readFileSync(join(dir, "clone", git.file.path), "utf8")).toBe(git.file.content);
    const gitRequests = up.seen.slice(before);
    expect(gitRequests.length).toBeGreaterThanOrEqual(2);
    for (const s of gitRequests) {
      expect(s.headers.authorization).toBe(`Bearer ${SECRET}`);
      expect(s.headers["user-agent"]).toStartWith("git/");
    }
    const all = relay.all();
    expect(all.includes(Buffer.from(SECRET))).toBe(false);
    expect(all.includes(Buffer.from(cg.keys.defaultAgentToken))).toBe(false);
  });
});

describe("the API port over HTTPS (docs/operations.md#tls)", () => {
  test("a PEM pair: HTTPS only, OAuth cookies Secure, the public URL https://localhost:<port>; a renewed pair applies without a restart while a client polls", async () => {
    const first = makePki(["localhost", "127.0.0.1"]);
    const second = makePki(["localhost", "127.0.0.1"]);
    const dir = tempDir();
    const certFile = join(dir, "cert.pem");
    const keyFile = join(dir, "key.pem");
    copyFileSync(first.certFile, certFile);
    copyFileSync(first.keyFile, keyFile);
    const apiPort = await freePort();
    const cg = await startCredgate({
      apiPort,
      env: { CREDGATE_TLS_CERT_FILE: certFile, CREDGATE_TLS_KEY_FILE: keyFile, CREDGATE_OAUTH_GITHUB_CLIENT_ID: "lan-client", CREDGATE_OAUTH_GITHUB_CLIENT_SECRET: "lan-client-secret" },
      apiTls: { ca: readFileSync(first.caFile, "utf8") },
    });
    try {
      expect((await cg.api("GET", "/v1/health")).status).toBe(200);
      // Plain HTTP gets no answer on the API port.
      const plain = await fetch(`http://127.0.0.1:${apiPort}/v1/health`).then((r) => r.status, () => "no answer");
      expect(plain).toBe("no answer");
      // Without CREDGATE_PUBLIC_URL the public URL is https://localhost:<port>, and the OAuth state cookie is Secure.
      const authorize = await fetch(`${cg.apiUrl}/v1/apps/github/authorize`, { headers: { authorization: `Bearer ${cg.keys.projectApiKey}` }, redirect: "manual", tls: { ca: cg.apiCa! } });
      expect(authorize.status).toBe(302);
      expect(new URL(authorize.headers.get("location")!).searchParams.get("redirect_uri")).toBe(`https://localhost:${apiPort}/v1/apps/github/callback`);
      expect(authorize.headers.get("set-cookie")).toContain("; Secure");

      // A client polls, a new TLS connection each time, trusting both CAs; every answer must be a 200. A connection
      // the kernel had queued on the old listener at the instant it closes is reset (Linux, SO_REUSEPORT, unless
      // net.ipv4.tcp_migrate_req=1): the poller retries such a connection once, as a client would.
      const cas = [readFileSync(first.caFile, "utf8"), readFileSync(second.caFile, "utf8")];
      const served = new Set<string>();
      const failures: string[] = [];
      let resets = 0;
      let polling = true;
      const poll = (async () => {
        while (polling) {
          try {
            const r = await healthOnce(apiPort, cas).catch((err: Error) => {
              if (!/ECONNRESET/.test(err.message)) throw err;
              resets++;
              return healthOnce(apiPort, cas);
            });
            served.add(r.fingerprint);
            if (r.status !== 200) failures.push(`status ${r.status}`);
          } catch (err) {
            failures.push((err as Error).message);
          }
          await Bun.sleep(10);
        }
      })();
      // The first certificate is being served before it is renewed.
      await untilTrue(() => served.size > 0, 5000);
      // Renewal as certbot does it: new files written beside the old ones, then renamed over them.
      copyFileSync(second.certFile, `${certFile}.new`);
      copyFileSync(second.keyFile, `${keyFile}.new`);
      renameSync(`${keyFile}.new`, keyFile);
      renameSync(`${certFile}.new`, certFile);
      const renewed = leafFingerprint(second.certFile);
      const deadline = Date.now() + 5000;
      while (Date.now() < deadline && !served.has(renewed)) await Bun.sleep(50);
      // A fixed wait: the polling goes on a while after the renewal, to show no request fails then either.
      await Bun.sleep(300);
      polling = false;
      await poll;
      expect(failures).toEqual([]);
      expect(resets).toBeLessThanOrEqual(1);
      expect(served).toEqual(new Set([leafFingerprint(first.certFile), renewed]));
      expect(cg.output()).toContain("API certificate reloaded");
      // Keys and the API still work over the new certificate.
      expect((await fetch(`${cg.apiUrl}/v1/agents`, { headers: { authorization: `Bearer ${cg.keys.projectApiKey}` }, tls: { ca: cas[1] } })).status).toBe(200);
    } finally {
      await cg.stop();
    }
  });

  test("CREDGATE_TLS=gateway-ca: the API's certificate is a leaf of the gateway CA; credgate run reaches it with the CA in NODE_EXTRA_CA_CERTS", async () => {
    const pki = makePki([HOST]);
    const up = startUpstream(pki);
    const cg = await startCredgate({ env: { CREDGATE_TLS: "gateway-ca", CREDGATE_UPSTREAM_CA_FILE: pki.caFile, CREDGATE_RESOLVE: resolveEntries([HOST], up.port) }, apiTls: {} });
    try {
      const r = await cg.api("POST", "/v1/secrets", {
        body: { name: "bearer", type: "generic", value: SECRET, hostPattern: HOST, injectionConfig: { headerName: "authorization", valueFormat: "Bearer {value}" } },
      });
      expect(r.status).toBe(201);
      const socket = tls.connect({ host: "127.0.0.1", port: cg.apiPort, ca: cg.apiCa!, servername: "localhost" });
      await new Promise<void>((resolve, reject) => (socket.once("secureConnect", resolve), socket.once("error", reject)));
      const cert = socket.getPeerCertificate();
      socket.destroy();
      expect(cert.subjectaltname).toContain("DNS:localhost");
      expect(cert.subjectaltname).toContain("IP Address:127.0.0.1");

      const caFile = join(tempDir(), "ca.pem");
      writeFileSync(caFile, cg.apiCa!);
      const path = `/gateway-ca/${crypto.randomUUID()}`;
      const run = await runVia(cg, ["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", `https://${HOST}:${up.port}${path}`], { NODE_EXTRA_CA_CERTS: caFile });
      expect(run.stderr).toBe("");
      expect(run.stdout).toBe("200");
      expect(up.seen.find((s) => s.url === path)?.headers.authorization).toBe(`Bearer ${SECRET}`);
    } finally {
      await cg.stop();
      await up.stop();
    }
  });

  test("a bad pair stops the start with one line naming the variable, before anything is written", async () => {
    const a = makePki(["localhost"]);
    const b = makePki(["localhost"]);
    const cases: [Record<string, string>, string][] = [
      [{ CREDGATE_TLS_CERT_FILE: "/nonexistent/cert.pem", CREDGATE_TLS_KEY_FILE: a.keyFile }, "credgate: CREDGATE_TLS_CERT_FILE: cannot read /nonexistent/cert.pem: no such file\n"],
      [{ CREDGATE_TLS_CERT_FILE: a.certFile, CREDGATE_TLS_KEY_FILE: b.keyFile }, `credgate: CREDGATE_TLS_KEY_FILE: the key in ${b.keyFile} does not belong to the certificate in ${a.certFile} (CREDGATE_TLS_CERT_FILE)\n`],
      [{ CREDGATE_TLS_CERT_FILE: a.keyFile, CREDGATE_TLS_KEY_FILE: a.keyFile }, `credgate: CREDGATE_TLS_CERT_FILE: ${a.keyFile} holds no PEM certificate\n`],
      [{ CREDGATE_TLS_CERT_FILE: a.certFile }, "credgate: CREDGATE_TLS_KEY_FILE must be set with CREDGATE_TLS_CERT_FILE\n"],
      [{ CREDGATE_TLS: "yes" }, 'credgate: CREDGATE_TLS must be "gateway-ca", got "yes"\n'],
    ];
    for (const [env, message] of cases) {
      const dataDir = join(tempDir(), "data");
      const r = await runCli(["serve", "--data-dir", dataDir, "--port", String(await freePort()), "--gateway-port", String(await freePort()), "--host", "127.0.0.1"], { ...(await storeEnvFor(dataDir)), ...env });
      expect(r.code).toBe(1);
      expect(r.stderr).toBe(message);
      expect(existsSync(dataDir)).toBe(false);
    }
  });
});

describe("the dashboard over HTTPS (docs/operations.md#tls) in Chromium", () => {
  test("sign-in with an API key over TLS: the session cookie is Secure and HttpOnly, and the pages work", async () => {
    const pki = makePki(["localhost", "127.0.0.1"]);
    const apiPort = await freePort();
    const cg = await startCredgate({ apiPort, env: { CREDGATE_TLS_CERT_FILE: pki.certFile, CREDGATE_TLS_KEY_FILE: pki.keyFile }, apiTls: { ca: readFileSync(pki.caFile, "utf8") } });
    // Chromium trusts exactly this certificate's key (it knows no test CA).
    const spki = createHash("sha256").update(new X509Certificate(readFileSync(pki.certFile)).publicKey.export({ type: "spki", format: "der" })).digest("base64");
    const browser = await launchBrowser({ trustKeys: [spki] });
    try {
      const w = await openPage(browser);
      const base = `https://localhost:${apiPort}`;
      await signIn(w.page, base, cg.keys.projectApiKey, cg.keys.projectId);
      const cookies = await w.context.cookies(base);
      const session = cookies.find((c) => c.name === "credgate_session")!;
      expect(session).toMatchObject({ secure: true, httpOnly: true, sameSite: "Lax" });
      await w.page.goto(`${base}/p/${cg.keys.projectId}/agents`);
      await w.page.getByText("Default Agent").first().waitFor();
      await closeCleanPages([w], base);
    } finally {
      await browser.close();
      await cg.stop();
    }
  }, 60_000);
});

describe("the warning when a port is open to the network in clear (docs/operations.md#tls)", () => {
  const API_LINE = "credgate: the API port accepts plain HTTP from the network: keys and agent tokens cross it in clear (set CREDGATE_TLS=gateway-ca or CREDGATE_TLS_CERT_FILE and CREDGATE_TLS_KEY_FILE to use TLS)";
  const GATEWAY_LINE = "credgate: the gateway port accepts plain HTTP from the network: keys and agent tokens cross it in clear (set CREDGATE_GATEWAY_URL=https://… to use TLS)";

  test("bound to every address with http:// URLs: one line per port at start, and doctor says the same", async () => {
    const cg = await startCredgate({ args: ["--host", "0.0.0.0"] });
    try {
      const lines = cg.output().split("\n");
      expect(lines.filter((l) => l === API_LINE).length).toBe(1);
      expect(lines.filter((l) => l === GATEWAY_LINE).length).toBe(1);
    } finally {
      await cg.stop();
    }
    const doctor = await runCli(["doctor", "--data-dir", cg.dataDir, "--host", "0.0.0.0", "--port", String(await freePort()), "--gateway-port", String(await freePort())], cg.env);
    expect(doctor.stdout).toContain(`warn  transport: ${API_LINE.replace("credgate: ", "")}`);
    expect(doctor.stdout).toContain(`warn  transport: ${GATEWAY_LINE.replace("credgate: ", "")}`);
    expect(doctor.code).toBe(0);
  });

  test("no warning on loopback, nor with TLS on both ports", async () => {
    const loopback = await startCredgate();
    await loopback.stop();
    expect(loopback.output()).not.toContain("accepts plain HTTP");
    const secure = await startCredgate({ args: ["--host", "0.0.0.0"], env: { CREDGATE_TLS: "gateway-ca", CREDGATE_GATEWAY_URL: "https://gateway.lan.test:10255" }, apiTls: {} });
    await secure.stop();
    expect(secure.output()).not.toContain("accepts plain HTTP");
  });
});

function leafFingerprint(certFile: string): string {
  return new X509Certificate(readFileSync(certFile)).fingerprint256;
}

/** One GET /v1/health on a new TLS connection: its status and the fingerprint of the leaf served. */
async function healthOnce(port: number, ca: string[]): Promise<{ status: number; fingerprint: string }> {
  const socket = tls.connect({ host: "127.0.0.1", port, ca, servername: "localhost" });
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once("secureConnect", resolve);
      socket.once("error", reject);
    });
    const fingerprint = socket.getPeerCertificate().fingerprint256;
    socket.write("GET /v1/health HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n");
    let text = "";
    for await (const chunk of socket) text += chunk.toString();
    return { status: Number(text.slice(9, 12)), fingerprint };
  } finally {
    socket.destroy();
  }
}
