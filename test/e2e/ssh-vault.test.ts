// SSH keys kept in an external vault or a secret store (docs/ssh.md#keys-in-an-external-vault), through the real
// credgate process: a 1Password Connect stand-in over HTTPS holds private keys (an SSH key item's PKCS#8, as
// 1Password gives it, and one in OpenSSH's format), a `cmd://` store command prints another (a real program run by
// credgate, CREDGATE_SECRET_COMMANDS), Debian's sshd serves the repository, OpenSSH's git clones with no key on
// the agent's side. The key is read through the gateway's vault cache (Connect asked once for several
// commands); a value that is no private key, and a reference the vault cannot answer, end the command with a
// clear message and a log row; neither the key nor the bad value shows in a response, a log, the agent's files
// or credgate's output.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { generateKeyPairSync } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { resolveEntries, run, until } from "../support/gateway.ts";
import { FakeConnect, startOpConnect, type RunningConnect } from "../support/opConnect.ts";
import { startCredgate, type RunningCredgate } from "../support/process.ts";
import { writeAgentSsh } from "../support/sshAgentSide.ts";
import { newKeyPair, startSshServer, type SshServer } from "../support/sshServer.ts";
import { tempDir } from "../support/tmp.ts";
import { makePki } from "../support/upstream.ts";

const CONNECT_HOST = "op-connect.test";
const CONNECT_TOKEN = `op-connect-token-${crypto.randomUUID()}`;
const NOT_A_KEY = `not-a-key-${crypto.randomUUID()}`;

let connect: RunningConnect;
let cg: RunningCredgate;
let sshd: SshServer;
let agentDir: string;
let sshEnv: Record<string, string>;
/** The key as 1Password's SSH key item holds it (PKCS#8), and a second one in OpenSSH's format. */
let pkcs8Key: string;
let opensshKey: { privateKey: string; publicKey: string };
let storeKey: { privateKey: string; publicKey: string };
const fake = new FakeConnect(CONNECT_TOKEN);
const secrets: Record<string, string> = {};

/** A new ed25519 key as PKCS#8 PEM with its OpenSSH public line (built here from the raw key). */
function pkcs8Ed25519(): { privateKey: string; publicKey: string } {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  const raw = publicKey.export({ type: "spki", format: "der" }).subarray(-32);
  const str = (b: Buffer) => Buffer.concat([Buffer.from([0, 0, 0, b.length]), b]);
  const blob = Buffer.concat([str(Buffer.from("ssh-ed25519")), str(raw)]);
  return { privateKey: privateKey.export({ type: "pkcs8", format: "pem" }) as string, publicKey: `ssh-ed25519 ${blob.toString("base64")}` };
}

/** A line from the middle of a PEM body: what would show if the key leaked. */
const bodyLine = (pem: string) => pem.trim().split("\n")[1]!;

async function vaultSshSecret(name: string, host: string, opRef: string): Promise<string> {
  const r = await cg.api("POST", "/v1/secrets", {
    body: { name, type: "generic", valueSource: "external_vault", opRef, hostPattern: host, injectionConfig: { ssh: { user: sshd.user, knownHosts: sshd.knownHostsLine(host) } } },
  });
  expect(r.status).toBe(201);
  return r.body.id;
}

async function storeSshSecret(name: string, host: string, storeRef: string): Promise<string> {
  const r = await cg.api("POST", "/v1/secrets", {
    body: { name, type: "generic", valueSource: "vault", storeRef, hostPattern: host, injectionConfig: { ssh: { user: sshd.user, knownHosts: sshd.knownHostsLine(host) } } },
  });
  expect(r.status).toBe(201);
  return r.body.id;
}

const ssh = (args: string[]) => run(["ssh", "-F", join(agentDir, "ssh_config"), ...args], { env: sshEnv, timeoutMs: 60_000 });
const gitRun = (args: string[]) => run(["git", ...args], { env: sshEnv, timeoutMs: 120_000 });

/** Connections sshd has accepted so far (its VERBOSE log). */
const connections = () => sshd.output().split("Connection from ").length - 1;

async function rowFor(host: string, path: string): Promise<any> {
  return until(async () => {
    const rows = (await cg.api("GET", "/v1/logs?limit=200")).body.data.filter((r: any) => r.method === "SSH" && r.host === host && r.path === path);
    if (rows.length === 0) throw new Error("no row yet");
    return rows[0];
  }, 15_000);
}

beforeAll(async () => {
  sshd = await startSshServer();
  const keys = tempDir("credgate-vaultkeys-");
  const pair = pkcs8Ed25519();
  pkcs8Key = pair.privateKey;
  opensshKey = newKeyPair(keys, "openssh_key");
  storeKey = newKeyPair(keys, "store_key");
  for (const k of [pair, opensshKey, storeKey]) sshd.authorize(k.publicKey);
  // cmd:// stores: `cat` of the key file (multi-line output, trimmed), and a command that fails.
  const commands = { deploykey: ["cat", join(keys, "store_key")], broken: ["false"] };
  sshd.bareRepo("team/app.git");
  const prod = fake.vault("Prod");
  fake.item(prod, "Deploy key", [
    { id: "private_key", label: "private key", value: pkcs8Key, type: "SSHKEY" },
    { id: "public_key", label: "public key", value: pair.publicKey, type: "STRING" },
  ]);
  fake.item(prod, "OpenSSH key", { "private key": opensshKey.privateKey });
  fake.item(prod, "Wrong", { "private key": NOT_A_KEY });
  const pki = makePki([CONNECT_HOST]);
  connect = startOpConnect(fake, pki);
  const hosts = ["vault.test", "openssh.test", "notkey.test", "missing.test", "store.test", "broken.test"];
  cg = await startCredgate({
    env: {
      CREDGATE_CONNECT_TO: hosts.map((h) => `${h}:22:127.0.0.1:${sshd.port}`).join(","),
      CREDGATE_RESOLVE: resolveEntries([CONNECT_HOST], connect.port),
      CREDGATE_UPSTREAM_CA_FILE: pki.caFile,
      CREDGATE_OP_CONNECT_HOST: `https://${CONNECT_HOST}:${connect.port}`,
      CREDGATE_OP_CONNECT_TOKEN: CONNECT_TOKEN,
      CREDGATE_SECRET_COMMANDS: JSON.stringify(commands),
    },
  });
  secrets.vault = await vaultSshSecret("vault-key", "vault.test", "op://Prod/Deploy key/private key");
  secrets.openssh = await vaultSshSecret("openssh-key", "openssh.test", "op://Prod/OpenSSH key/private key");
  secrets.notkey = await vaultSshSecret("wrong-key", "notkey.test", "op://Prod/Wrong/private key");
  secrets.missing = await vaultSshSecret("missing-key", "missing.test", "op://Prod/Nothing here/private key");
  secrets.store = await storeSshSecret("store-key", "store.test", "cmd://deploykey");
  secrets.broken = await storeSshSecret("broken-key", "broken.test", "cmd://broken");
  ({ dir: agentDir, env: sshEnv } = await writeAgentSsh(cg));
}, 120_000);

afterAll(async () => {
  await cg?.stop();
  await sshd?.stop();
  await connect?.stop();
});

describe("a key in 1Password", () => {
  test("an SSH key item's key (PKCS#8): clone and ls-remote with no key on the agent's side; Connect asked once", async () => {
    const before = fake.requests.length;
    const work = tempDir("credgate-vault-clone-");
    const clone = await gitRun(["clone", "-q", "git@vault.test:team/app.git", join(work, "app")]);
    expect(clone.stderr).toBe("");
    expect(clone.code).toBe(0);
    expect(readFileSync(join(work, "app", "README.md"), "utf8")).toBe("hello\n");
    for (let i = 0; i < 2; i++) expect((await gitRun(["ls-remote", "-q", "git@vault.test:team/app.git"])).code).toBe(0);
    // One lookup (vault, item list, item) for three connections: the value is cached a minute.
    const items = fake.since(before).filter((r) => r.url.includes("/items/"));
    expect(items.length).toBe(1);
    const row = await rowFor("vault.test", "git-upload-pack 'team/app.git'");
    expect(row.status).toBe(200);
    expect(row.decision).toBe("allowed");
  });

  test("a key in OpenSSH's format works too", async () => {
    const r = await gitRun(["ls-remote", "-q", "git@openssh.test:team/app.git"]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("refs/heads/main");
  });

  test("a value that is not a private key: the command ends with the message, a row (502), nothing sent", async () => {
    const before = connections();
    const r = await ssh(["git@notkey.test", "git-upload-pack", "'team/app.git'"]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain('credgate: the key of the SSH secret "wrong-key" is not an unencrypted OpenSSH private key');
    expect(r.stderr).not.toContain(NOT_A_KEY);
    const row = await rowFor("notkey.test", "git-upload-pack 'team/app.git'");
    expect(row.status).toBe(502);
    expect(row.decision).toBe("error");
    // credgate did not even connect to the server.
    expect(connections()).toBe(before);
  });

  test("a reference the vault cannot answer: the reason in the message, a row (502)", async () => {
    const r = await ssh(["git@missing.test", "git-upload-pack", "'team/app.git'"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('credgate: the key of the SSH secret "missing-key" could not be read from the external vault (item_not_found)');
    const row = await rowFor("missing.test", "git-upload-pack 'team/app.git'");
    expect(row.status).toBe(502);
  });
});

describe("a key in a secret store (cmd://)", () => {
  test("the command's output is the key: clone with no key on the agent's side", async () => {
    const work = tempDir("credgate-store-clone-");
    const clone = await gitRun(["clone", "-q", "git@store.test:team/app.git", join(work, "app")]);
    expect(clone.stderr).toBe("");
    expect(clone.code).toBe(0);
    expect(readFileSync(join(work, "app", "README.md"), "utf8")).toBe("hello\n");
    expect((await rowFor("store.test", "git-upload-pack 'team/app.git'")).status).toBe(200);
  });

  test("a failing command: the message names the secret and the store's reason, a row (502)", async () => {
    const r = await ssh(["git@broken.test", "git-upload-pack", "'team/app.git'"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/credgate: the key of the SSH secret "broken-key" could not be read from its secret store \(\w+\)/);
    expect((await rowFor("broken.test", "git-upload-pack 'team/app.git'")).status).toBe(502);
  });
});

describe("the key stays in the vault and credgate", () => {
  test("not in a response, a log line, the agent's files or the database", async () => {
    const leaks = [bodyLine(pkcs8Key), bodyLine(opensshKey.privateKey), bodyLine(storeKey.privateKey), NOT_A_KEY];
    const texts = [(await cg.api("GET", "/v1/logs?limit=500")).text, cg.output()];
    for (const id of Object.values(secrets)) texts.push((await cg.api("GET", `/v1/secrets/${id}`)).text);
    for (const dir of [agentDir, cg.dataDir]) {
      for (const f of readdirSync(dir)) {
        const p = join(dir, f);
        if (statSync(p).isFile()) texts.push(readFileSync(p, "latin1"));
      }
    }
    for (const text of texts) for (const leak of leaks) expect(text).not.toContain(leak);
  });
});
