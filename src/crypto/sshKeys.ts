// SSH keys (docs/ssh.md#the-ssh-secret): reading a stored private key (ed25519, ECDSA or RSA; OpenSSH or
// unencrypted PEM), its public line for the forge, and a new ed25519 key in OpenSSH's own format.
import { utils, type ParsedKey } from "ssh2";

/** The private key of an `ssh` secret, or null when the value is not an unencrypted private key we can sign with. */
export function parseSshPrivateKey(value: string): ParsedKey | null {
  const parsed = utils.parseKey(value.trim());
  const key = Array.isArray(parsed) ? parsed[0] : parsed;
  if (!key || key instanceof Error || !key.isPrivateKey()) return null;
  if (!["ssh-ed25519", "ssh-rsa", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521"].includes(key.type)) return null;
  return key;
}

/** `<type> <base64> <comment>`: the line a forge takes as a deploy key or user key. */
export function publicKeyLine(value: string, comment: string): string | null {
  const key = parseSshPrivateKey(value);
  if (!key) return null;
  const safe = comment.replace(/[\s\u0000-\u001f]+/g, "-");
  return `${key.type} ${key.getPublicSSH().toString("base64")}${safe ? ` ${safe}` : ""}`;
}

/** A new ed25519 key in OpenSSH format (what ssh-keygen writes). */
export function generateEd25519(comment: string): { privateKey: string; publicKey: string } {
  const pair = utils.generateKeyPairSync("ed25519", { comment });
  return { privateKey: pair.private, publicKey: pair.public.trim() };
}
