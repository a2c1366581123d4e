// Google Cloud and Azure identities through the real binary (docs/cloud-identities.md): the agent runs the real
// SDKs — google-auth-library and @google-cloud/storage, Python's google-auth, @azure/identity (client secret and
// managed identity) with @azure/storage-blob — on the placeholders container-config hands out; a fake Google and a
// fake Azure verify the service account's RS256 assertion with its public key, the client secret and the scope,
// and accept only tokens they minted. Twenty concurrent requests across two gateway processes mint once; the token
// is never handed back to the agent; past its expiry one new token is minted; a refused mint → 502; the metadata
// endpoints are answered by credgate in absolute-form and inside plain CONNECT :80 tunnels, never dialled.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { generateKeyPairSync } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { credgateCommand, sharedDatabaseEnv, startCredgate, type RunningCredgate } from "../support/process.ts";
import { makePki } from "../support/upstream.ts";
import { gatewayCa, openTlsTunnel, rawRequest, ResponseReader, run } from "../support/gateway.ts";
import { GOOGLE_TOKEN_URI, startFakeClouds, type FakeClouds } from "../support/fakeClouds.ts";
import { testEngine } from "../support/postgres.ts";
import { tempDir } from "../support/tmp.ts";

const HOSTS = ["oauth2.googleapis.com", "storage.googleapis.com", "login.microsoftonline.com", "acct.blob.core.windows.net"];
const EMAIL = "robot@demo-project.iam.gserviceaccount.com";
const TENANT = "72f988bf-86f1-41af-91ab-2d7cd011db47";
const CLIENT = "0e5a2c44-1f7e-4c5b-9a3d-6b1d2e3f4a5b";
const CLIENT_SECRET = "Q~real.azure_client-secret~0123456789abcdef";
const OBJECT = { container: "reports", name: "q3.txt", content: "quarterly numbers: 42\n" };
const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
const PEM = privateKey.export({ type: "pkcs8", format: "pem" }).toString();
const SA_KEY = JSON.stringify({ type: "service_account", project_id: "demo-project", private_key_id: "k-real-1", private_key: PEM, client_email: EMAIL, client_id: "1", token_uri: GOOGLE_TOKEN_URI });

let clouds: FakeClouds;
let cg: RunningCredgate;
let env: Record<string, string>;
let ca: { file: string; pem: string };
let setup: { env: Record<string, string>; credentialStubs: { containerPath: string; content: string }[] };
let stubFile: string;

const proxyOf = (c: RunningCredgate, token = cg.keys.defaultAgentToken) => `http://x:${token}@127.0.0.1:${c.gatewayPort}`;

/** The agent's environment: the proxy, the gateway CA and the cloud placeholders from container-config. */
function agentEnv(c: RunningCredgate = cg, over: Record<string, string | undefined> = {}): Record<string, string | undefined> {
  return {
    HTTPS_PROXY: proxyOf(c),
    HTTP_PROXY: proxyOf(c),
    NO_PROXY: "",
    NODE_EXTRA_CA_CERTS: ca.file,
    REQUESTS_CA_BUNDLE: ca.file,
    GOOGLE_CLOUD_PROJECT: setup.env.GOOGLE_CLOUD_PROJECT,
    GOOGLE_APPLICATION_CREDENTIALS: stubFile,
    AZURE_TENANT_ID: setup.env.AZURE_TENANT_ID,
    AZURE_CLIENT_ID: setup.env.AZURE_CLIENT_ID,
    AZURE_CLIENT_SECRET: setup.env.AZURE_CLIENT_SECRET,
    ...over,
  };
}

async function start(extra: Record<string, string> = {}, dataDir?: string): Promise<RunningCredgate> {
  return startCredgate({ env: { ...env, ...extra }, ...(dataDir ? { dataDir } : {}) });
}

/** The pid of the gateway process holding the connection from `clientPort` (ss's socket table). */
function servingPid(gatewayPort: number, clientPort: number): number | null {
  const r = spawnSync("ss", ["-Htnp", "state", "established", `( sport = :${gatewayPort} and dport = :${clientPort} )`], { encoding: "utf8" });
  const m = /pid=(\d+)/.exec(r.stdout);
  return m ? Number(m[1]) : null;
}

async function curl(args: string[], c: RunningCredgate = cg): Promise<{ status: number; body: string; out: string }> {
  const r = await run(["curl", "-sS", "-w", "\n%{http_code}", "--proxy", proxyOf(c), "--cacert", ca.file, ...args]);
  const nl = r.stdout.lastIndexOf("\n");
  return { status: Number(r.stdout.slice(nl + 1)), body: r.stdout.slice(0, nl), out: r.stdout };
}

const gcsUrl = `https://storage.googleapis.com/storage/v1/b/${OBJECT.container}/o/${OBJECT.name}?alt=media`;

beforeAll(async () => {
  const pki = makePki(HOSTS);
  clouds = startFakeClouds(pki, {
    gcp: { email: EMAIL, publicKeyPem: publicKey.export({ type: "spki", format: "pem" }).toString() },
    azure: { tenantId: TENANT, clientId: CLIENT, clientSecret: CLIENT_SECRET },
    object: OBJECT,
  });
  env = { CREDGATE_GATEWAY_WORKERS: "2", CREDGATE_UPSTREAM_CA_FILE: pki.caFile, CREDGATE_CONNECT_TO: HOSTS.map((h) => `${h}:443:127.0.0.1:${clouds.port}`).join(",") };
  cg = await start();
  ca = await gatewayCa(cg);
  const gcp = await cg.api("POST", "/v1/secrets", { body: { name: "gcp", type: "generic", value: SA_KEY, injectionConfig: { gcpServiceAccount: {} } } });
  expect(gcp.status).toBe(201);
  expect(gcp.body.hostPattern).toBe("*.googleapis.com");
  const az = await cg.api("POST", "/v1/secrets", {
    body: { name: "azure", type: "generic", value: CLIENT_SECRET, hostPattern: "*.blob.core.windows.net", injectionConfig: { azureClientSecret: { tenantId: TENANT, clientId: CLIENT } } },
  });
  expect(az.status).toBe(201);
  setup = (await cg.api("GET", "/v1/container-config")).body;
  const stub = setup.credentialStubs.find((s) => s.containerPath === "/tmp/credgate-gcp-credentials.json")!;
  stubFile = join(tempDir(), "gcp-credentials.json");
  writeFileSync(stubFile, stub.content);
}, 90_000);

afterAll(async () => {
  await cg?.stop();
  await clouds?.stop();
});

describe("agent setup", () => {
  test("container-config: the Google and Azure placeholders, and a stub service-account file that holds no real key", async () => {
    expect(setup.env).toMatchObject({
      GOOGLE_APPLICATION_CREDENTIALS: "/tmp/credgate-gcp-credentials.json",
      GOOGLE_CLOUD_PROJECT: "demo-project",
      AZURE_TENANT_ID: TENANT,
      AZURE_CLIENT_ID: CLIENT,
      AZURE_CLIENT_SECRET: "credgate-managed",
    });
    const stub = JSON.parse(readFileSync(stubFile, "utf8"));
    expect(stub).toMatchObject({ type: "service_account", client_email: EMAIL, project_id: "demo-project", token_uri: GOOGLE_TOKEN_URI });
    expect(stub.private_key).toContain("PRIVATE KEY");
    expect(stub.private_key).not.toBe(PEM);
    const text = JSON.stringify(setup);
    expect(text).not.toContain(PEM.split("\n")[1]);
    expect(text).not.toContain(CLIENT_SECRET);
  });
});

describe("minting", () => {
  test("20 concurrent requests across both gateway processes: one mint, every request carries the minted token", async () => {
    const tunnels: { pid: number | null; tls: import("node:tls").TLSSocket; reader: ResponseReader }[] = [];
    const pids = new Set<number | null>();
    for (let i = 0; i < 200 && (tunnels.length < 20 || pids.size < 2); i++) {
      const t = await openTlsTunnel(cg.gatewayPort, "storage.googleapis.com:443", cg.keys.defaultAgentToken, ca.pem, "storage.googleapis.com");
      const pid = servingPid(cg.gatewayPort, t.tls.localPort!);
      tunnels.push({ ...t, pid });
      pids.add(pid);
    }
    expect(pids.size).toBe(2);
    expect(clouds.google.mints.length).toBe(0);
    const path = `/storage/v1/b/${OBJECT.container}/o/${OBJECT.name}?alt=media`;
    const answers = await Promise.all(
      tunnels.map(async (t) => {
        t.tls.write(rawRequest("GET", path, "storage.googleapis.com", ["Authorization: Bearer credgate-managed-gcp"]));
        const res = await t.reader.response();
        t.tls.destroy();
        return { status: res.status, body: res.text };
      }),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(tunnels.length).fill(200));
    expect(answers.every((a) => a.body === OBJECT.content)).toBe(true);
    expect(clouds.google.refused).toEqual([]);
    expect(clouds.google.mints.length).toBe(1);
    expect(clouds.google.mints[0]!.scope).toBe("https://www.googleapis.com/auth/cloud-platform");
    const token = clouds.google.mints[0]!.token;
    expect(clouds.used.slice(-tunnels.length).every((u) => u.ok && u.token === token)).toBe(true);
    if (testEngine() === "sqlite") expect(readFileSync(join(cg.dataDir, "credgate.db")).includes(Buffer.from(token))).toBe(false);
  }, 90_000);

  test("@google-cloud/storage (google-auth-library on the stub file) downloads an object; no new mint", async () => {
    const before = clouds.google.mints.length;
    const script = `
      const { Storage } = require("@google-cloud/storage");
      new Storage().bucket(${JSON.stringify(OBJECT.container)}).file(${JSON.stringify(OBJECT.name)}).download()
        .then(([buf]) => console.log(JSON.stringify({ content: buf.toString() })))
        .catch((e) => { console.error(e.message); process.exit(1); });`;
    const r = await run(["node", "-e", script], { env: agentEnv(), timeoutMs: 60_000 });
    expect(r.stderr).toBe("");
    expect(JSON.parse(r.stdout)).toEqual({ content: OBJECT.content });
    expect(clouds.google.mints.length).toBe(before);
    expect(clouds.google.refused).toEqual([]);
  }, 90_000);

  test("google-auth-library on the GCE metadata server (no key file): project, email and an authorized request", async () => {
    const script = `
      const { GoogleAuth } = require("google-auth-library");
      (async () => {
        const auth = new GoogleAuth({ scopes: ["https://www.googleapis.com/auth/cloud-platform"] });
        const client = await auth.getClient();
        const project = await auth.getProjectId();
        const creds = await auth.getCredentials();
        const res = await client.request({ url: ${JSON.stringify(gcsUrl)}, responseType: "text" });
        console.log(JSON.stringify({ kind: client.constructor.name, project, email: creds.client_email, status: res.status, content: res.data }));
      })().catch((e) => { console.error(e.message); process.exit(1); });`;
    const r = await run(["node", "-e", script], { env: agentEnv(cg, { GOOGLE_APPLICATION_CREDENTIALS: undefined, GCE_METADATA_HOST: "metadata.google.internal" }), timeoutMs: 60_000 });
    expect(r.stderr).toBe("");
    expect(JSON.parse(r.stdout)).toEqual({ kind: "Compute", project: "demo-project", email: EMAIL, status: 200, content: OBJECT.content });
  }, 90_000);

  test("Python google-auth (/usr/bin/python3) on the stub file", async () => {
    const script = `
import google.auth, google.auth.transport.requests as tr
creds, project = google.auth.default(scopes=["https://www.googleapis.com/auth/cloud-platform"])
r = tr.AuthorizedSession(creds).get(${JSON.stringify(gcsUrl)})
print(project, r.status_code, r.text, end="")`;
    const r = await run(["/usr/bin/python3", "-c", script], { env: agentEnv(), timeoutMs: 60_000 });
    expect(r.stdout).toBe(`demo-project 200 ${OBJECT.content}`);
  }, 90_000);

  test("@azure/identity ClientSecretCredential with @azure/storage-blob: the blob, minted for https://storage.azure.com/.default", async () => {
    const script = `
      const { ClientSecretCredential } = require("@azure/identity");
      const { BlobServiceClient } = require("@azure/storage-blob");
      const e = process.env;
      const cred = new ClientSecretCredential(e.AZURE_TENANT_ID, e.AZURE_CLIENT_ID, e.AZURE_CLIENT_SECRET);
      new BlobServiceClient("https://acct.blob.core.windows.net", cred).getContainerClient(${JSON.stringify(OBJECT.container)}).getBlobClient(${JSON.stringify(OBJECT.name)})
        .downloadToBuffer().then((b) => console.log(JSON.stringify({ content: b.toString() })))
        .catch((err) => { console.error(err.message); process.exit(1); });`;
    const r = await run(["node", "-e", script], { env: agentEnv(), timeoutMs: 60_000 });
    expect(r.stderr).toBe("");
    expect(JSON.parse(r.stdout)).toEqual({ content: OBJECT.content });
    expect(clouds.azure.refused).toEqual([]);
    expect(clouds.azure.mints.map((m) => m.scope)).toEqual(["https://storage.azure.com/.default"]);
    const token = clouds.azure.mints[0]!.token;
    const blobUses = clouds.used.filter((u) => u.host === "acct.blob.core.windows.net");
    expect(blobUses.length).toBeGreaterThan(0);
    expect(blobUses.every((u) => u.ok && u.token === token)).toBe(true);
  }, 90_000);

  test("@azure/identity DefaultAzureCredential (the AZURE_* placeholders) with @azure/storage-blob; no new mint", async () => {
    const before = clouds.azure.mints.length;
    const script = `
      const { DefaultAzureCredential } = require("@azure/identity");
      const { BlobServiceClient } = require("@azure/storage-blob");
      new BlobServiceClient("https://acct.blob.core.windows.net", new DefaultAzureCredential()).getContainerClient(${JSON.stringify(OBJECT.container)}).getBlobClient(${JSON.stringify(OBJECT.name)})
        .downloadToBuffer().then((b) => console.log(JSON.stringify({ content: b.toString() })))
        .catch((err) => { console.error(err.message); process.exit(1); });`;
    const r = await run(["node", "-e", script], { env: agentEnv(), timeoutMs: 60_000 });
    expect(r.stderr).toBe("");
    expect(JSON.parse(r.stdout)).toEqual({ content: OBJECT.content });
    expect(clouds.azure.mints.length).toBe(before);
  }, 90_000);

  test("@azure/identity ManagedIdentityCredential (IMDS answered by credgate) with @azure/storage-blob", async () => {
    const before = clouds.azure.mints.length;
    const script = `
      const { ManagedIdentityCredential } = require("@azure/identity");
      const { BlobServiceClient } = require("@azure/storage-blob");
      new BlobServiceClient("https://acct.blob.core.windows.net", new ManagedIdentityCredential()).getContainerClient(${JSON.stringify(OBJECT.container)}).getBlobClient(${JSON.stringify(OBJECT.name)})
        .downloadToBuffer().then((b) => console.log(JSON.stringify({ content: b.toString() })))
        .catch((err) => { console.error(err.message); process.exit(1); });`;
    const r = await run(["node", "-e", script], { env: agentEnv(cg, { AZURE_CLIENT_ID: undefined, AZURE_TENANT_ID: undefined, AZURE_CLIENT_SECRET: undefined }), timeoutMs: 60_000 });
    expect(r.stderr).toBe("");
    expect(JSON.parse(r.stdout)).toEqual({ content: OBJECT.content });
    expect(clouds.azure.mints.length).toBe(before);
  }, 90_000);

  test("an origin that reflects the request hands the agent no minted token (the echo guard)", async () => {
    for (const [host, auth] of [["storage.googleapis.com", "Bearer credgate-managed-gcp"], ["acct.blob.core.windows.net", "Bearer credgate-managed-azure"]] as const) {
      const r = await curl(["-i", "-H", `authorization: ${auth}`, `https://${host}/reflect`]);
      expect(r.status).toBe(200);
      const token = clouds.used.at(-1)!.token!;
      expect(clouds.used.at(-1)!.ok).toBe(true);
      expect(r.out.includes(token)).toBe(false);
      expect(r.out).toContain("x-reflected-authorization: Bearer credgate-redacted");
    }
  });
});

describe("credgate run", () => {
  test("`credgate run -- node …`: the stub file, GCE_METADATA_HOST and the Azure placeholders; @google-cloud/storage works as it is", async () => {
    const script = `
      const e = process.env;
      const stub = JSON.parse(require("node:fs").readFileSync(e.GOOGLE_APPLICATION_CREDENTIALS, "utf8"));
      const { Storage } = require("@google-cloud/storage");
      new Storage().bucket(${JSON.stringify(OBJECT.container)}).file(${JSON.stringify(OBJECT.name)}).download()
        .then(([buf]) => console.log(JSON.stringify({ content: buf.toString(), email: stub.client_email, meta: e.GCE_METADATA_HOST, project: e.GOOGLE_CLOUD_PROJECT, azure: [e.AZURE_TENANT_ID, e.AZURE_CLIENT_ID, e.AZURE_CLIENT_SECRET] })))
        .catch((err) => { console.error(err.message); process.exit(1); });`;
    const r = await run([...credgateCommand(), "run", "--", "node", "-e", script], { env: { CREDGATE_URL: cg.apiUrl, CREDGATE_API_KEY: cg.keys.projectApiKey }, timeoutMs: 60_000 });
    expect(r.stderr).toBe("");
    expect(JSON.parse(r.stdout)).toEqual({ content: OBJECT.content, email: EMAIL, meta: "metadata.google.internal", project: "demo-project", azure: [TENANT, CLIENT, "credgate-managed"] });
  }, 90_000);
});

describe("leak guard", () => {
  test("a minted token on its way to a host of no secret of its cloud → 403 credential_leak_blocked; to a Google host it passes", async () => {
    // The agent never gets a minted token (the echo guard); here the test plays an agent that got one some other way.
    const token = clouds.google.mints.at(-1)!.token;
    const used = clouds.used.length;
    const r = await curl(["-H", `x-debug: ${token}`, `https://acct.blob.core.windows.net/${OBJECT.container}/${OBJECT.name}`]);
    expect(r.status).toBe(403);
    expect(JSON.parse(r.body).error).toBe("credential_leak_blocked");
    expect(clouds.used.length).toBe(used);
    const ok = await curl(["-H", `x-debug: ${token}`, gcsUrl]);
    expect(ok.status).toBe(200);
  });
});

describe("placeholder endpoints", () => {
  test("the Google and Azure token endpoints are answered with placeholders, nothing reaching the vendor", async () => {
    const seen = clouds.google.mints.length + clouds.google.refused.length + clouds.azure.mints.length + clouds.azure.refused.length;
    const g = await curl(["-d", "grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=x.y.z", "https://oauth2.googleapis.com/token"]);
    expect([g.status, JSON.parse(g.body)]).toEqual([200, { access_token: "credgate-managed-gcp", expires_in: 3599, token_type: "Bearer" }]);
    const legacy = await curl(["-d", "grant_type=refresh_token&refresh_token=credgate-managed", "https://www.googleapis.com/oauth2/v4/token"]);
    expect(JSON.parse(legacy.body).access_token).toBe("credgate-managed-gcp");
    const a = await curl(["-d", `grant_type=client_credentials&client_id=${CLIENT}&client_secret=credgate-managed&scope=https%3A%2F%2Fstorage.azure.com%2F.default`, `https://login.microsoftonline.com/${TENANT}/oauth2/v2.0/token`]);
    expect([a.status, JSON.parse(a.body)]).toEqual([200, { access_token: "credgate-managed-azure", expires_in: 3599, token_type: "Bearer" }]);
    expect(clouds.google.mints.length + clouds.google.refused.length + clouds.azure.mints.length + clouds.azure.refused.length).toBe(seen);
  });

  test("GCE metadata in absolute-form and inside a plain CONNECT :80 tunnel, on both names; Metadata-Flavor required; other paths 404", async () => {
    for (const tunnel of [[], ["--proxytunnel"]]) {
      for (const host of ["metadata.google.internal", "169.254.169.254"]) {
        const base = `http://${host}/computeMetadata/v1`;
        const project = await run(["curl", "-sS", "-i", ...tunnel, "--proxy", proxyOf(cg), "-H", "Metadata-Flavor: Google", `${base}/project/project-id`]);
        expect(project.stdout).toMatch(/^HTTP\/1\.1 200/);
        expect(project.stdout.toLowerCase()).toContain("metadata-flavor: google");
        expect(project.stdout.endsWith("\r\n\r\ndemo-project")).toBe(true);
        const email = await curl([...tunnel, "-H", "Metadata-Flavor: Google", `${base}/instance/service-accounts/default/email`]);
        expect([email.status, email.body]).toEqual([200, EMAIL]);
        const token = await curl([...tunnel, "-H", "Metadata-Flavor: Google", `${base}/instance/service-accounts/default/token`]);
        expect([token.status, JSON.parse(token.body)]).toEqual([200, { access_token: "credgate-managed-gcp", expires_in: 3599, token_type: "Bearer" }]);
        expect((await curl([...tunnel, `${base}/project/project-id`])).status).toBe(403);
        expect((await curl([...tunnel, "-H", "Metadata-Flavor: Google", `${base}/instance/attributes/ssh-keys`])).status).toBe(404);
        expect((await curl([...tunnel, "-H", "Metadata-Flavor: Google", `http://${host}/latest/meta-data/iam/`])).status).toBe(404);
      }
    }
  });

  test("the Azure managed-identity endpoint: the standard answer with Metadata: true, 400 without it", async () => {
    const url = "http://169.254.169.254/metadata/identity/oauth2/token?api-version=2018-02-01&resource=https%3A%2F%2Fstorage.azure.com%2F";
    const r = await curl(["-H", "Metadata: true", url]);
    expect(r.status).toBe(200);
    const body = JSON.parse(r.body);
    expect(body).toMatchObject({ access_token: "credgate-managed-azure", client_id: CLIENT, expires_in: "3599", resource: "https://storage.azure.com/", token_type: "Bearer" });
    expect(Number(body.expires_on)).toBeGreaterThan(Date.now() / 1000);
    expect((await curl([url])).status).toBe(400);
    const tunnelled = await curl(["--proxytunnel", "-H", "Metadata: true", url]);
    expect(JSON.parse(tunnelled.body).access_token).toBe("credgate-managed-azure");
  });

  test("an agent that may use no cloud secret gets the egress guard's refusal for 169.254.169.254, as before", async () => {
    const other = await cg.api("POST", "/v1/agents", { body: { name: "no-cloud", identifier: "no-cloud", mode: "grants" } });
    expect(other.status).toBe(201);
    const token = (await cg.api("POST", `/v1/agents/${other.body.id}/regenerate-token`)).body.accessToken;
    const r = await run(["curl", "-sS", "-w", "\n%{http_code}", "--proxy", proxyOf(cg, token), "-H", "Metadata-Flavor: Google", "http://169.254.169.254/computeMetadata/v1/project/project-id"]);
    expect(r.stdout).toEndWith("\n403");
    expect(r.stdout).toContain("egress_denied");
    const tunnel = await run(["curl", "-sS", "-w", "\n%{http_code}", "--proxytunnel", "--proxy", proxyOf(cg, token), "http://169.254.169.254/metadata/identity/oauth2/token"]);
    expect(tunnel.code).not.toBe(0);
  });
});

describe("expiry and failures", () => {
  test("an Azure secret without a scope on a host that implies none → 502 credential_unavailable", async () => {
    const r = await cg.api("POST", "/v1/secrets", {
      body: { name: "azure-other", type: "generic", value: CLIENT_SECRET, hostPattern: "storage.googleapis.com", pathPattern: "/azure-only/*", injectionConfig: { azureClientSecret: { tenantId: TENANT, clientId: CLIENT } } },
    });
    expect(r.status).toBe(201);
    const res = await curl(["https://storage.googleapis.com/azure-only/x"]);
    expect(res.status).toBe(502);
    expect(JSON.parse(res.body).error).toBe("credential_unavailable");
    expect((await cg.api("DELETE", `/v1/secrets/${r.body.id}`)).status).toBe(204);
  });

  test("past the token's expiry (under 5 minutes left), the next requests mint one new token between them", async () => {
    await cg.stop();
    const before = clouds.google.mints.length;
    cg = await start({ CREDGATE_TEST_NOW_OFFSET_SECONDS: String(56 * 60) }, cg.dataDir);
    const answers = await Promise.all(Array.from({ length: 10 }, () => curl(["-H", "authorization: Bearer credgate-managed-gcp", gcsUrl])));
    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(200));
    expect(clouds.google.mints.length - before).toBe(1);
  }, 90_000);

  test.if(testEngine() === "postgres")("two instances on one PostgreSQL database mint once between them", async () => {
    await cg.stop();
    clouds.tokenSeconds = 3 * 3600;
    cg = await start({ CREDGATE_TEST_NOW_OFFSET_SECONDS: String(2 * 3600) }, cg.dataDir);
    const other = await start({ CREDGATE_TEST_NOW_OFFSET_SECONDS: String(2 * 3600), ...sharedDatabaseEnv(cg) });
    try {
      const before = clouds.google.mints.length;
      const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => curl(["-H", "authorization: Bearer credgate-managed-gcp", gcsUrl], i % 2 ? other : cg)));
      expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
      expect(clouds.google.mints.length - before).toBe(1);
    } finally {
      await other.stop();
      clouds.tokenSeconds = 3599;
    }
  }, 90_000);

  test("a mint the issuer refuses → 502 credential_unavailable, nothing forwarded", async () => {
    await cg.stop();
    clouds.failMintsWith = 500;
    cg = await start({ CREDGATE_TEST_NOW_OFFSET_SECONDS: String(10 * 3600) }, cg.dataDir);
    try {
      const used = clouds.used.length;
      const r = await curl(["-H", "authorization: Bearer credgate-managed-gcp", gcsUrl]);
      expect(r.status).toBe(502);
      expect(JSON.parse(r.body)).toEqual({ error: "credential_unavailable", message: "credgate could not obtain the credential for storage.googleapis.com, so the request was not forwarded." });
      expect(clouds.used.length).toBe(used);
    } finally {
      clouds.failMintsWith = null;
    }
  }, 60_000);
});
