// The `ssh` secret variant through the API (docs/ssh.md#the-ssh-secret): validation in order, the private key
// check (ed25519, ECDSA, RSA in OpenSSH and PEM form; encrypted and other values refused), the stored form with
// its defaults, key generation and the public half, the SSH CA line; the key never in a response.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestApi, type TestApi } from "../support/app.ts";
import { expectFlat } from "./helpers.ts";

let api: TestApi;
let dir: string;
const keys: Record<string, { priv: string; pub: string }> = {};
function keygen(name: string, args: string[]): void {
  const file = join(dir, name);
  execFileSync("ssh-keygen", ["-q", "-N", "", "-C", "", "-f", file, ...args]);
  keys[name] = { priv: readFileSync(file, "utf8"), pub: readFileSync(`${file}.pub`, "utf8").trim() };
}
const HOST_KEY = "github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl";

beforeAll(async () => {
  api = await createTestApi();
  dir = mkdtempSync(join(tmpdir(), "credgate-sshkeys-"));
  keygen("ed", ["-t", "ed25519"]);
  keygen("ec", ["-t", "ecdsa"]);
  keygen("rsa", ["-t", "rsa", "-b", "2048"]);
  keygen("rsapem", ["-t", "rsa", "-b", "2048", "-m", "PEM"]);
  execFileSync("ssh-keygen", ["-q", "-N", "passphrase", "-t", "ed25519", "-f", join(dir, "enc")]);
  keys.enc = { priv: readFileSync(join(dir, "enc"), "utf8"), pub: "" };
});
afterAll(async () => {
  await api?.core.close();
  rmSync(dir, { recursive: true, force: true });
});

let seq = 0;
const ssh = (cfg: unknown, over: Record<string, unknown> = {}) => ({ name: `ssh-${++seq}`, type: "generic", value: keys.ed!.priv, hostPattern: "github.com", injectionConfig: { ssh: cfg }, ...over });
const post = (body: unknown, path = "/v1/secrets") => api.call("POST", path, { body });
const F = (f: string) => `injectionConfig.ssh.${f}`;

describe("validation", () => {
  test.each([
    ["not an object", "x", "injectionConfig.ssh must be an object"],
    ["an unknown field", { knownHosts: HOST_KEY, key: "x" }, 'injectionConfig.ssh has unknown field "key"'],
    ["user a number", { user: 1, knownHosts: HOST_KEY }, `${F("user")} must be a string`],
    ["user with a space", { user: "a b", knownHosts: HOST_KEY }, `${F("user")} must not contain spaces, @ or control characters`],
    ["no knownHosts", {}, "knownHosts must hold at least one host key"],
    ["knownHosts only comments", { knownHosts: "# nothing\n\n" }, "knownHosts must hold at least one host key"],
    ["knownHosts not a line", { knownHosts: "github.com" }, `${F("knownHosts")} must be known_hosts lines: <hosts> <key type> <base64 key>`],
    ["knownHosts a cert-authority line", { knownHosts: `@cert-authority * ${HOST_KEY.split(" ").slice(1).join(" ")}` }, `${F("knownHosts")} must be known_hosts lines: <hosts> <key type> <base64 key>`],
    ["knownHosts type and blob disagree", { knownHosts: "github.com ssh-rsa AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl" }, `${F("knownHosts")} must be known_hosts lines: <hosts> <key type> <base64 key>`],
    ["commands unknown", { knownHosts: HOST_KEY, commands: "shell" }, `${F("commands")} must be one of: git, any`],
    ["push unknown", { knownHosts: HOST_KEY, push: "ask" }, `${F("push")} must be one of: allow, approve, block`],
  ])("%s → 400", async (_l, cfg, message) => {
    expectFlat(await post(ssh(cfg)), 400, message);
  });

  test.each(["ed", "ec", "rsa", "rsapem"])("a %s private key is taken, stored with the defaults", async (name) => {
    const r = await post(ssh({ knownHosts: HOST_KEY }, { value: keys[name]!.priv }));
    expect(r.status).toBe(201);
    expect(JSON.stringify(r.body)).not.toContain(keys[name]!.priv.split("\n")[2]!);
    const got = await api.call("GET", `/v1/secrets/${r.body.id}`);
    expect(got.body.injectionConfig).toEqual({ ssh: { user: "git", knownHosts: HOST_KEY, commands: "git", push: "allow" } });
    const pub = await api.call("GET", `/v1/secrets/${r.body.id}/public-key`);
    expect(pub.status).toBe(200);
    expect(pub.body.publicKey.split(" ").slice(0, 2).join(" ")).toBe(keys[name]!.pub.split(" ").slice(0, 2).join(" "));
  });

  test.each([
    ["an encrypted key", () => keys.enc!.priv],
    ["a public key", () => keys.ed!.pub],
    ["a password", () => "hunter2-hunter2"],
  ])("%s → 400 value must be an OpenSSH private key", async (_l, value) => {
    expectFlat(await post(ssh({ knownHosts: HOST_KEY }, { value: value() })), 400, "value must be an OpenSSH private key");
  });

  test("an edit to a non-key value is refused the same way", async () => {
    const r = await post(ssh({ knownHosts: HOST_KEY }));
    expectFlat(await api.call("PATCH", `/v1/secrets/${r.body.id}`, { body: { value: "not a key at all" } }), 400, "value must be an OpenSSH private key");
  });
});

describe("keys", () => {
  test("generate-ssh-key creates an ed25519 secret and answers its public key, never the private one", async () => {
    const r = await post({ name: "gen", hostPattern: "github.com", ssh: { knownHosts: HOST_KEY, push: "approve" } }, "/v1/secrets/generate-ssh-key");
    expect(r.status).toBe(201);
    expect(r.body.publicKey).toMatch(/^ssh-ed25519 AAAAC3NzaC1lZDI1NTE5[A-Za-z0-9+/=]+ credgate-gen$/);
    expect(JSON.stringify(r.body)).not.toContain("PRIVATE KEY");
    expect(r.body.name).toBe("gen");
    const pub = await api.call("GET", `/v1/secrets/${r.body.id}/public-key`);
    expect(pub.body.publicKey).toBe(r.body.publicKey);
    const got = await api.call("GET", `/v1/secrets/${r.body.id}`);
    expect(got.body.injectionConfig.ssh.push).toBe("approve");
    expect(JSON.stringify(got.body)).not.toContain("PRIVATE KEY");
  });

  test("generate-ssh-key checks its fields", async () => {
    expectFlat(await post({ name: "g2", hostPattern: "https://github.com", ssh: { knownHosts: HOST_KEY } }, "/v1/secrets/generate-ssh-key"), 400, "Enter a hostname, not a URL (remove http:// or https://)");
    expectFlat(await post({ name: "g3", hostPattern: "github.com", ssh: {} }, "/v1/secrets/generate-ssh-key"), 400, "knownHosts must hold at least one host key");
  });

  test("the public key of a secret that is no SSH key → 400; of an unknown id → 404", async () => {
    const r = await post({ name: "hdr", type: "generic", value: "v-123456789", hostPattern: "x.example.com", injectionConfig: { headerName: "x-k" } });
    const pub = await api.call("GET", `/v1/secrets/${r.body.id}/public-key`);
    expect(pub.status).toBe(400);
    const none = await api.call("GET", `/v1/secrets/00000000-0000-4000-8000-000000000000/public-key`);
    expect(none.status).toBe(404);
  });

  test("GET /v1/gateway/ssh-ca needs no key and is one @cert-authority line", async () => {
    const r = await api.call("GET", "/v1/gateway/ssh-ca", { key: null });
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toContain("text/plain");
    expect(r.text.trim()).toMatch(/^@cert-authority \* ssh-ed25519 AAAAC3NzaC1lZDI1NTE5[A-Za-z0-9+/=]+ credgate$/);
  });
});

test("the gateway skill tells an agent how to reach git over SSH from a container (socat ProxyCommand, the CA line)", async () => {
  const r = await api.call("GET", "/v1/skill/gateway");
  expect(r.status).toBe(200);
  expect(r.text).toContain("ProxyCommand socat - PROXY:<gateway host>:%h:%p,proxyport=<gateway port>,proxyauth=x:<agent token>");
  expect(r.text).toContain("/v1/gateway/ssh-ca");
});
