// The key the SSH interception logs in with (docs/ssh.md#keys-in-an-external-vault): inline or from the vault
// (the real VaultResolver over the 1Password Connect stand-in), PKCS#8 rewritten into what ssh2 reads, anything
// else refused with a message that names the secret and never the value.
import { describe, expect, test } from "bun:test";
import { generateKeyPairSync } from "node:crypto";
import { ssh2 } from "../../src/crypto/ssh2Module.ts";
import { generateEd25519, parseSshPrivateKey, sshPrivateKeyText } from "../../src/crypto/sshKeys.ts";
import { notAKeyMessage, storedKey, vaultFailedMessage } from "../../src/gateway/ssh/storedKey.ts";
import { VaultResolver } from "../../src/vault/resolver.ts";
import { FakeConnect, fakeFetch } from "../support/opConnect.ts";

/** The public key blob node derives, in SSH wire form, to compare with what ssh2 reads from the rewritten text. */
function sshBlobOf(publicKey: import("node:crypto").KeyObject): Buffer {
  const str = (b: Buffer) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(b.length);
    return Buffer.concat([len, b]);
  };
  const raw = publicKey.export({ type: "spki", format: "der" }).subarray(-32);
  return Buffer.concat([str(Buffer.from("ssh-ed25519")), str(raw)]);
}

describe("sshPrivateKeyText", () => {
  test("PKCS#8 ed25519 is rewritten in OpenSSH's format, the same key", () => {
    const { privateKey, publicKey } = generateKeyPairSync("ed25519");
    const text = sshPrivateKeyText(privateKey.export({ type: "pkcs8", format: "pem" }) as string)!;
    expect(text).toStartWith("-----BEGIN OPENSSH PRIVATE KEY-----");
    const parsed = ssh2().utils.parseKey(text) as import("ssh2").ParsedKey;
    expect(parsed.type).toBe("ssh-ed25519");
    expect(parsed.getPublicSSH().equals(sshBlobOf(publicKey))).toBe(true);
  });

  test("PKCS#8 RSA and ECDSA become PKCS#1 and SEC1", () => {
    const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs8", format: "pem" }) as string;
    expect(sshPrivateKeyText(rsa)).toStartWith("-----BEGIN RSA PRIVATE KEY-----");
    expect(parseSshPrivateKey(rsa)!.type).toBe("ssh-rsa");
    for (const [curve, type] of [["P-256", "ecdsa-sha2-nistp256"], ["P-384", "ecdsa-sha2-nistp384"]] as const) {
      const ec = generateKeyPairSync("ec", { namedCurve: curve }).privateKey.export({ type: "pkcs8", format: "pem" }) as string;
      expect(sshPrivateKeyText(ec)).toStartWith("-----BEGIN EC PRIVATE KEY-----");
      expect(parseSshPrivateKey(ec)!.type).toBe(type);
    }
  });

  test("an OpenSSH key stays as it is (trimmed); not a key, a public key, an encrypted PKCS#8 → null", () => {
    const key = generateEd25519("c").privateKey;
    expect(sshPrivateKeyText(`\n${key}\n`)).toBe(key.trim());
    expect(sshPrivateKeyText("hunter2")).toBeNull();
    expect(sshPrivateKeyText(generateEd25519("c").publicKey)).toBeNull();
    const { privateKey } = generateKeyPairSync("ed25519");
    const encrypted = privateKey.export({ type: "pkcs8", format: "pem", cipher: "aes-256-cbc", passphrase: "pw" }) as string;
    expect(sshPrivateKeyText(encrypted)).toBeNull();
    // A PKCS#8 key of a kind SSH keys are not (X25519).
    const x25519 = generateKeyPairSync("x25519").privateKey.export({ type: "pkcs8", format: "pem" }) as string;
    expect(sshPrivateKeyText(x25519)).toBeNull();
  });
});

describe("storedKey", () => {
  const fake = new FakeConnect("tok");
  const dev = fake.vault("Dev");
  const inVault = generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }) as string;
  fake.item(dev, "Deploy key", { "private key": inVault });
  fake.item(dev, "Wrong", { "private key": "not-a-key-value-42" });
  const vault = new VaultResolver({ host: "https://connect.example", token: "tok", fetch: fakeFetch(fake) });
  const cred = (over: { key?: string | null; valueRef?: string | null }) => ({ name: "deploy", key: null, valueRef: null, ...over });

  test("inline: the key itself, or the message", async () => {
    const key = generateEd25519("").privateKey;
    expect(await storedKey(cred({ key }), vault)).toEqual({ ok: true, key: key.trim() });
    expect(await storedKey(cred({ key: "nope" }), vault)).toEqual({ ok: false, message: notAKeyMessage("deploy") });
  });

  test("from the vault: read and rewritten; looked up once (the cache answers the second time at once)", async () => {
    const before = fake.requests.length;
    const first = await storedKey(cred({ valueRef: "op://Dev/Deploy key/private key" }), vault);
    expect(first.ok).toBe(true);
    expect((first as { key: string }).key).toStartWith("-----BEGIN OPENSSH PRIVATE KEY-----");
    const lookups = fake.requests.length - before;
    expect(lookups).toBeGreaterThan(0);
    expect(vault.peek("op://Dev/Deploy key/private key")?.ok).toBe(true);
    const second = await storedKey(cred({ valueRef: "op://Dev/Deploy key/private key" }), vault);
    const pub = (k: typeof first) => parseSshPrivateKey((k as { key: string }).key)!.getPublicSSH().toString("base64");
    expect(pub(second)).toBe(pub(first));
    expect(fake.requests.length - before).toBe(lookups);
  });

  test("a vault value that is no key, a missing item, no vault configured: messages without the value", async () => {
    const wrong = await storedKey(cred({ valueRef: "op://Dev/Wrong/private key" }), vault);
    expect(wrong).toEqual({ ok: false, message: notAKeyMessage("deploy") });
    expect(JSON.stringify(wrong)).not.toContain("not-a-key-value-42");
    expect(await storedKey(cred({ valueRef: "op://Dev/Gone/private key" }), vault)).toEqual({ ok: false, message: vaultFailedMessage("deploy", "op://Dev/Gone/private key", "item_not_found") });
    const none = new VaultResolver({ host: null, token: null, fetch: fakeFetch(fake) });
    expect(await storedKey(cred({ valueRef: "op://Dev/Deploy key/private key" }), none)).toEqual({ ok: false, message: vaultFailedMessage("deploy", "op://Dev/Deploy key/private key", "not_configured") });
  });
});
