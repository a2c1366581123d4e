// HashiCorp Vault and OpenBao (docs/vault.md#kv-version-2-values): `vault://<mount>/<path>#<field>` is one
// read of a KV version 2 secret (`GET <mount>/data/<path>` → data.data[field]); `vault-db://<mount>/<role>` is a
// database lease the PostgreSQL broker takes through `leases` (vaultLeases.ts). Both share credgate's one Vault
// login (vaultAuth.ts). Configured by CREDGATE_VAULT_ADDR with CREDGATE_VAULT_TOKEN or the AppRole pair.
import type { StoreRef } from "../../core/storeRefs.ts";
import { log } from "../../observability/log.ts";
import type { Config } from "../../runtime/config.ts";
import { StoreError, type SecretStore, type StoreContext } from "./types.ts";
import { VaultAuth, type VaultCredentials } from "./vaultAuth.ts";
import { vaultAddrOf, vaultCall, vaultFailure, type VaultEndpoint } from "./vaultHttp.ts";
import { VaultLeases } from "./vaultLeases.ts";

export class HashicorpVault implements SecretStore {
  readonly auth: VaultAuth;
  /** The database leases of `vault-db://` references, held by the process running the broker. */
  readonly leases: VaultLeases;

  constructor(
    private readonly endpoint: VaultEndpoint,
    credentials: VaultCredentials,
    now: () => number,
  ) {
    this.auth = new VaultAuth(endpoint, credentials);
    this.leases = new VaultLeases(endpoint, this.auth, now);
  }

  async read(ref: StoreRef, signal: AbortSignal): Promise<string> {
    if (ref.kind === "vault") return this.#readKv(ref, signal);
    if (ref.kind === "vault-db") return (await this.#tryLease(ref, signal)).user;
    throw new StoreError("wrong_store", "not a HashiCorp Vault reference");
  }

  /** A `vault-db://` test says what happened to the lease it took (its user is no secret; its password never shown); a `vault://` test is a read. */
  async test(ref: StoreRef, signal: AbortSignal): Promise<string | null> {
    if (ref.kind !== "vault-db") return null;
    const { user, path, revoked } = await this.#tryLease(ref, signal);
    return revoked
      ? `HashiCorp Vault gave a lease for user ${user} (${path}); credgate revoked it at once.`
      : `HashiCorp Vault gave a lease for user ${user} (${path}); credgate could not revoke it, so Vault ends it at its TTL.`;
  }

  async close(): Promise<void> {
    await this.leases.close();
    this.auth.close();
  }

  async #readKv(ref: Extract<StoreRef, { kind: "vault" }>, signal: AbortSignal): Promise<string> {
    const where = `${ref.mount}/${ref.path}`;
    const token = await this.auth.token(signal);
    const answer = await vaultCall(this.endpoint, { method: "GET", path: `${ref.mount}/data/${ref.path}`, token }, signal);
    if (answer.status === 404) {
      throw new StoreError("not_found", `HashiCorp Vault has no secret at ${where} (the mount must be a KV version 2 engine)`);
    }
    if (answer.status !== 200) throw vaultFailure(answer, where);
    const data = answer.body?.data?.data;
    // A deleted (or destroyed) latest version answers 404 too, but its metadata may come with null data.
    if (data === null || typeof data !== "object") throw new StoreError("not_found", `HashiCorp Vault has no current version of ${where}`);
    if (!Object.hasOwn(data, ref.field)) throw new StoreError("field_missing", `the secret at ${where} has no field "${ref.field}"`);
    const value = data[ref.field];
    if (typeof value !== "string") throw new StoreError("not_a_string", `the field "${ref.field}" of ${where} is not a string`);
    return value;
  }

  /**
   * A `vault-db://` reference has no value to cache: a read (POST /v1/secrets/{id}/test) takes a lease and revokes
   * it at once, proving credgate may. The answer is the lease's user name and whether it was revoked, never its password.
   */
  async #tryLease(ref: Extract<StoreRef, { kind: "vault-db" }>, signal: AbortSignal): Promise<{ user: string; path: string; revoked: boolean }> {
    const path = `${ref.mount}/creds/${ref.role}`;
    const token = await this.auth.token(signal);
    const answer = await vaultCall(this.endpoint, { method: "GET", path, token }, signal);
    if (answer.status !== 200) throw vaultFailure(answer, path);
    const user = answer.body?.data?.username;
    const leaseId = answer.body?.lease_id;
    let revoked = true;
    if (typeof leaseId === "string" && leaseId !== "") {
      const answer = await vaultCall(this.endpoint, { method: "PUT", path: "sys/leases/revoke", token, body: { lease_id: leaseId } }, signal).catch(() => null);
      revoked = answer !== null && answer.status < 300;
      if (!revoked) log.warn("test lease not revoked: Vault ends it at its TTL", { path });
    }
    if (typeof user !== "string") throw new StoreError("unexpected_answer", `HashiCorp Vault's answer for ${path} has no username`);
    return { user, path, revoked };
  }
}

/** The store the registry built for a process's Config: the broker takes its leases with the same login. */
const built = new WeakMap<Config, HashicorpVault>();

/** The HashiCorp Vault store of this process (built by the registry, stores/index.ts), or null when not configured. */
export function hashicorpStoreOf(config: Config): HashicorpVault | null {
  return built.get(config) ?? null;
}

/** The store when CREDGATE_VAULT_ADDR and a credential (token, or role and secret ids) are set; else null. */
export function hashicorpStoreFrom(ctx: StoreContext): HashicorpVault | null {
  const { config } = ctx;
  const addr = vaultAddrOf(config.vaultAddr);
  if (config.vaultAddr !== null && addr === null) log.warn("CREDGATE_VAULT_ADDR is not a usable http(s) URL; HashiCorp Vault is not configured");
  if (addr === null) return null;
  let credentials: VaultCredentials;
  if (config.vaultRoleId !== null && config.vaultSecretId !== null) credentials = { kind: "approle", roleId: config.vaultRoleId, secretId: config.vaultSecretId };
  else if (config.vaultToken !== null) credentials = { kind: "token", token: config.vaultToken };
  else {
    log.warn("CREDGATE_VAULT_ADDR is set without CREDGATE_VAULT_TOKEN or CREDGATE_VAULT_ROLE_ID/CREDGATE_VAULT_SECRET_ID; HashiCorp Vault is not configured");
    return null;
  }
  const store = new HashicorpVault({ addr, namespace: config.vaultNamespace, fetch: ctx.fetch }, credentials, ctx.now);
  built.set(config, store);
  return store;
}
