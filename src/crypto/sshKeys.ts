// SSH keys (docs/ssh.md#the-ssh-secret): reading a stored private key (ed25519, ECDSA or RSA; OpenSSH format or
// unencrypted PEM, PKCS#8 included), its public line for the forge, and a new ed25519 key in OpenSSH's own format.
import { createPrivateKey, generateKeyPairSync, randomBytes, type KeyObject } from "node:crypto";
import type { ParsedKey } from "ssh2";
import { ssh2 } from "./ssh2Module.ts";

const KEY_TYPES = ["ssh-ed25519", "ssh-rsa", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521"];

/**
 * The key as text ssh2 reads, or null when it is no unencrypted private key. ssh2 reads OpenSSH's format, PKCS#1
 * and SEC1 PEM but not PKCS#8 (`BEGIN PRIVATE KEY`: what 1Password gives for an SSH key item, and what
 * `openssl genpkey` writes): a PKCS#8 key is rewritten, RSA as PKCS#1, ECDSA as SEC1, ed25519 in OpenSSH's format.
 */
export function sshPrivateKeyText(value: string): string | null {
  const text = value.trim();
  if (!/^-----BEGIN PRIVATE KEY-----/.test(text)) return parseText(text) ? text : null;
  let key: KeyObject;
  try {
    key = createPrivateKey(text);
  } catch {
    return null;
  }
  let rewritten: string;
  switch (key.asymmetricKeyType) {
    case "rsa":
      rewritten = key.export({ type: "pkcs1", format: "pem" }) as string;
      break;
    case "ec":
      rewritten = key.export({ type: "sec1", format: "pem" }) as string;
      break;
    case "ed25519":
      rewritten = opensshEd25519(key, "").privateKey;
      break;
    default:
      return null;
  }
  return parseText(rewritten.trim()) ? rewritten.trim() : null;
}

function parseText(text: string): ParsedKey | null {
  const parsed = ssh2().utils.parseKey(text);
  const key = Array.isArray(parsed) ? parsed[0] : parsed;
  if (!key || key instanceof Error || !key.isPrivateKey()) return null;
  return KEY_TYPES.includes(key.type) ? key : null;
}

/** The private key of an `ssh` secret, or null when the value is not an unencrypted private key we can sign with. */
export function parseSshPrivateKey(value: string): ParsedKey | null {
  const text = sshPrivateKeyText(value);
  return text === null ? null : parseText(text);
}

/** `<type> <base64> <comment>`: the line a forge takes as a deploy key or user key. */
export function publicKeyLine(value: string, comment: string): string | null {
  const key = parseSshPrivateKey(value);
  if (!key) return null;
  const safe = comment.replace(/[\s\u0000-\u001f]+/g, "-");
  return `${key.type} ${key.getPublicSSH().toString("base64")}${safe ? ` ${safe}` : ""}`;
}

/**
 * A new ed25519 key in OpenSSH's own format (what ssh-keygen writes: `openssh-key-v1`, no cipher). Written here
 * from node:crypto's raw key: ssh2's generator drops a leading zero byte of the public key under Bun (about one
 * key in 128 came out unreadable).
 */
export function generateEd25519(comment: string): { privateKey: string; publicKey: string } {
  return opensshEd25519(generateKeyPairSync("ed25519").privateKey, comment);
}

/** An ed25519 private key in OpenSSH's format, with its public line. */
function opensshEd25519(privateKey: KeyObject, comment: string): { privateKey: string; publicKey: string } {
  const jwk = privateKey.export({ format: "jwk" });
  const seed = Buffer.from(jwk.d!, "base64url");
  const pub = Buffer.from(jwk.x!, "base64url");
  const blob = Buffer.concat([sshString("ssh-ed25519"), sshString(pub)]);
  const check = randomBytes(4);
  let secret = Buffer.concat([check, check, sshString("ssh-ed25519"), sshString(pub), sshString(Buffer.concat([seed, pub])), sshString(comment)]);
  const pad = (8 - (secret.length % 8)) % 8;
  secret = Buffer.concat([secret, Buffer.from(Array.from({ length: pad }, (_, i) => i + 1))]);
  const body = Buffer.concat([
    Buffer.from("openssh-key-v1\0", "latin1"),
    sshString("none"),
    sshString("none"),
    sshString(""),
    u32(1),
    sshString(blob),
    sshString(secret),
  ]);
  const lines = body.toString("base64").match(/.{1,70}/g)!.join("\n");
  return {
    privateKey: `-----BEGIN OPENSSH PRIVATE KEY-----\n${lines}\n-----END OPENSSH PRIVATE KEY-----\n`,
    publicKey: `ssh-ed25519 ${blob.toString("base64")}${comment ? ` ${comment}` : ""}`,
  };
}

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
}

function sshString(v: Buffer | string): Buffer {
  const b = typeof v === "string" ? Buffer.from(v, "utf8") : v;
  return Buffer.concat([u32(b.length), b]);
}
