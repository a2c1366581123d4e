// credgate's own login to HashiCorp Vault (docs/vault.md#credgates-vault-login): CREDGATE_VAULT_TOKEN as
// given, or an AppRole login (`POST auth/approle/login` with CREDGATE_VAULT_ROLE_ID / CREDGATE_VAULT_SECRET_ID)
// whose token is renewed with `auth/token/renew-self` at half its TTL; a new login only when a renewal fails or
// can no longer extend the token (its max TTL is near). One login at a time, whoever waits for it.
import { log } from "../../observability/log.ts";
import { abortable } from "../../core/boundedRead.ts";
import { StoreError } from "./types.ts";
import { vaultCall, vaultFailure, type VaultEndpoint } from "./vaultHttp.ts";

export type VaultCredentials = { kind: "token"; token: string } | { kind: "approle"; roleId: string; secretId: string };

interface Held {
  token: string;
  /** The TTL the login gave (seconds; 0 = none): a renewal answering less means the max TTL is near. */
  ttl: number;
}

export class VaultAuth {
  #held: Held | null = null;
  #login: Promise<Held> | null = null;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #closed = false;

  constructor(
    private readonly endpoint: VaultEndpoint,
    private readonly credentials: VaultCredentials,
  ) {}

  /** The token to call Vault with (logging in first when needed). */
  async token(signal: AbortSignal): Promise<string> {
    if (this.credentials.kind === "token") return this.credentials.token;
    if (this.#held) return this.#held.token;
    return (await this.#loginOnce(signal)).token;
  }

  /** Stops renewing. */
  close(): void {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
  }

  #loginOnce(signal: AbortSignal): Promise<Held> {
    // Not tied to one caller's signal: others may be waiting on the same login.
    this.#login ??= this.#logIn().finally(() => (this.#login = null));
    return abortable(this.#login, signal, () => new StoreError("timeout", "HashiCorp Vault did not answer in time"));
  }

  async #logIn(): Promise<Held> {
    const approle = this.credentials as Extract<VaultCredentials, { kind: "approle" }>;
    const answer = await vaultCall(
      this.endpoint,
      { method: "POST", path: "auth/approle/login", token: null, body: { role_id: approle.roleId, secret_id: approle.secretId } },
      AbortSignal.timeout(30_000),
    );
    const auth = answer.body?.auth;
    if (answer.status !== 200 || typeof auth?.client_token !== "string") {
      if (answer.status === 400 || answer.status === 403) {
        throw new StoreError("login_failed", "HashiCorp Vault refused credgate's AppRole login (check CREDGATE_VAULT_ROLE_ID and CREDGATE_VAULT_SECRET_ID)");
      }
      throw vaultFailure(answer, "auth/approle/login");
    }
    const ttl = typeof auth.lease_duration === "number" ? auth.lease_duration : 0;
    const held: Held = { token: auth.client_token, ttl };
    this.#held = held;
    log.info("logged in to HashiCorp Vault with AppRole", { ttlSeconds: ttl });
    this.#schedule(ttl, auth.renewable === true);
    return held;
  }

  /** Renewal at half the TTL left; a token that cannot be renewed is replaced by a new login then. */
  #schedule(ttlSeconds: number, renewable: boolean): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    if (this.#closed || ttlSeconds <= 0) return;
    const act = renewable ? () => this.#renew() : () => this.#relogin("the token is not renewable");
    this.#timer = setTimeout(() => void act(), (ttlSeconds * 1000) / 2);
    this.#timer.unref?.();
  }

  async #renew(): Promise<void> {
    const held = this.#held;
    if (!held || this.#closed) return;
    try {
      const answer = await vaultCall(this.endpoint, { method: "POST", path: "auth/token/renew-self", token: held.token, body: {} }, AbortSignal.timeout(30_000));
      const auth = answer.body?.auth;
      if (answer.status !== 200 || typeof auth?.lease_duration !== "number") throw vaultFailure(answer, "auth/token/renew-self");
      const ttl: number = auth.lease_duration;
      // A renewal that gives less than the login did has hit the token's max TTL: log in again at half of it.
      if (ttl + 1 < held.ttl) {
        log.info("HashiCorp Vault token nears its max TTL; a new login follows", { ttlSeconds: ttl });
        this.#timer = setTimeout(() => void this.#relogin("the token reached its max TTL"), (ttl * 1000) / 2);
        this.#timer.unref?.();
        return;
      }
      this.#schedule(ttl, auth.renewable !== false);
    } catch (err) {
      await this.#relogin(`renewal failed (${(err as StoreError).reason ?? "error"})`);
    }
  }

  async #relogin(why: string): Promise<void> {
    if (this.#closed) return;
    log.warn("HashiCorp Vault token replaced by a new AppRole login", { why });
    this.#held = null;
    try {
      await this.#loginOnce(AbortSignal.timeout(30_000));
    } catch (err) {
      // The next read logs in again.
      log.warn("HashiCorp Vault AppRole login failed", { reason: (err as StoreError).reason ?? "error" });
    }
  }
}
