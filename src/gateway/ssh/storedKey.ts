// The private key credgate logs in with (docs/ssh.md#keys-in-an-external-vault): the secret's sealed value, or
// the value its reference names in the external vault or a secret store (the process's value cache: looked up
// once per reference per cache lifetime, never per command). Whatever its source, it must read as an unencrypted private key; a PKCS#8 key
// (1Password's format for SSH key items) is rewritten into one ssh2 reads. A failure names the secret and the
// reason, never the value.
import { sshPrivateKeyText } from "../../crypto/sshKeys.ts";
import type { Lookup, VaultResolver } from "../../vault/resolver.ts";
import type { SshCredential } from "../snapshot.ts";

export type StoredKey = { ok: true; key: string } | { ok: false; message: string };

export type KeyVault = Pick<VaultResolver, "peek" | "resolve">;

export function notAKeyMessage(name: string): string {
  return `credgate: the key of the SSH secret "${name}" is not an unencrypted OpenSSH private key`;
}

/** `ref`: an `op://` reference names the external vault; any other, a secret store. */
export function vaultFailedMessage(name: string, ref: string, reason: string): string {
  const where = ref.startsWith("op://") ? "the external vault" : "its secret store";
  return `credgate: the key of the SSH secret "${name}" could not be read from ${where} (${reason})`;
}

export async function storedKey(credential: Pick<SshCredential, "name" | "key" | "valueRef">, vault: KeyVault): Promise<StoredKey> {
  let value = credential.key;
  if (value === null) {
    const ref = credential.valueRef;
    if (ref === null) return { ok: false, message: `credgate: the SSH secret "${credential.name}" has no key` };
    const found: Lookup = vault.peek(ref) ?? (await vault.resolve(ref));
    if (!found.ok) return { ok: false, message: vaultFailedMessage(credential.name, ref, found.reason) };
    value = found.value;
  }
  const key = sshPrivateKeyText(value);
  return key === null ? { ok: false, message: notAKeyMessage(credential.name) } : { ok: true, key };
}
