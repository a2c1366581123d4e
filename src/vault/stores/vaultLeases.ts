// Database leases from Vault's database secrets engine (docs/vault.md#database-leases): a `vault-db://`
// reference on a `database` secret gives the PostgreSQL broker a fresh user and password per lease. A lease is
// taken on the broker's first use of the secret (one for every connection waiting on it), renewed at half its TTL
// (`PUT sys/leases/renew`), and replaced on the next use once a renewal fails or can no longer extend it (the max
// TTL is near); a replaced lease is left to run out for the sessions still on it. Leases are revoked
// (`PUT sys/leases/revoke`) when their secret is deleted or points elsewhere, and at stop. The password lives in
// this process's memory only; logs name the lease's user and the secret, never the password.
import { log } from "../../observability/log.ts";
import { StoreError } from "./types.ts";
import type { VaultAuth } from "./vaultAuth.ts";
import { vaultCall, vaultFailure, type VaultEndpoint } from "./vaultHttp.ts";

export interface LeasedLogin {
  user: string;
  password: string;
}

interface Lease {
  secretId: string;
  ref: string;
  leaseId: string;
  user: string;
  password: string;
  /** The TTL the lease was issued with (seconds). */
  ttl: number;
  expiresAt: number;
  timer: ReturnType<typeof setTimeout> | null;
}

/** A lease is not handed to a new connection in its last seconds: the login must happen while it stands. */
const LAST_USE_MARGIN_MS = 2_000;

export class VaultLeases {
  /** The lease new connections of each secret use. */
  #current = new Map<string, Lease>();
  /** Every lease held and not revoked (current or replaced), for revocation. */
  #held = new Set<Lease>();
  /** Leases being taken, by secret and reference: connections that come meanwhile wait for the same one. */
  #taking = new Map<string, Promise<Lease>>();
  /** Bumped by each release of a secret: a lease taken across one is given back at once. */
  #releases = new Map<string, number>();
  #closed = false;
  /**
   * Told of each new lease: its secret and reference (to be told when the secret stops using it) and its password
   * (the leak guard watches it: no statement needs it).
   */
  onLease: ((secretId: string, ref: string, password: string) => void) | null = null;

  constructor(
    private readonly endpoint: VaultEndpoint,
    private readonly auth: VaultAuth,
    private readonly now: () => number = Date.now,
  ) {}

  /** The login for `secretId`'s `vault-db://<mount>/<role>`: its current lease, or a new one. */
  async login(secretId: string, ref: string, target: { mount: string; role: string }): Promise<LeasedLogin> {
    if (this.#closed) throw new StoreError("closed", "credgate is stopping");
    const current = this.#current.get(secretId);
    if (current && current.ref === ref && current.expiresAt - this.now() > LAST_USE_MARGIN_MS) return { user: current.user, password: current.password };
    if (current && current.ref !== ref) await this.#revokeAll(secretId, "the secret's storeRef changed");
    const key = `${secretId}\n${ref}`;
    let taking = this.#taking.get(key);
    if (!taking) {
      taking = this.#take(secretId, ref, target).finally(() => this.#taking.delete(key));
      this.#taking.set(key, taking);
    }
    const lease = await taking;
    return { user: lease.user, password: lease.password };
  }

  /** Revokes the leases of a secret deleted, or whose storeRef changed (services/storeRefChanges.ts says when). */
  async release(secretId: string, why: string): Promise<void> {
    this.#releases.set(secretId, (this.#releases.get(secretId) ?? 0) + 1);
    await this.#revokeAll(secretId, why);
  }

  /** Revokes every lease held (at stop). */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all([...this.#held].map((l) => this.#revoke(l, "credgate is stopping")));
  }

  async #take(secretId: string, ref: string, target: { mount: string; role: string }): Promise<Lease> {
    const path = `${target.mount}/creds/${target.role}`;
    const releases = this.#releases.get(secretId) ?? 0;
    const signal = AbortSignal.timeout(30_000);
    const token = await this.auth.token(signal);
    const answer = await vaultCall(this.endpoint, { method: "GET", path, token }, signal);
    const body = answer.body;
    if (answer.status !== 200) throw vaultFailure(answer, path);
    const user = body?.data?.username, password = body?.data?.password;
    if (typeof user !== "string" || typeof password !== "string" || typeof body?.lease_id !== "string") {
      throw new StoreError("unexpected_answer", `HashiCorp Vault's answer for ${path} has no username and password`);
    }
    const ttl = typeof body.lease_duration === "number" ? body.lease_duration : 0;
    const lease: Lease = { secretId, ref, leaseId: body.lease_id, user, password, ttl, expiresAt: ttl > 0 ? this.now() + ttl * 1000 : Infinity, timer: null };
    if (this.#closed) {
      await this.#revoke(lease, "credgate is stopping");
      throw new StoreError("closed", "credgate is stopping");
    }
    // The secret was deleted or moved while Vault answered: nothing would ever release this lease.
    if ((this.#releases.get(secretId) ?? 0) !== releases) {
      await this.#revoke(lease, "the secret changed while the lease was taken");
      throw new StoreError("released", "the secret changed while its lease was taken: reconnect");
    }
    this.#held.add(lease);
    const replaced = this.#current.get(secretId);
    this.#current.set(secretId, lease);
    if (replaced && replaced.ref !== ref) await this.#revoke(replaced, "the secret's storeRef changed");
    this.onLease?.(secretId, ref, password);
    log.info("database lease taken from HashiCorp Vault", { secretId, user, ttlSeconds: ttl });
    if (ttl > 0 && body.renewable === true) this.#renewAt(lease, ttl);
    else if (ttl > 0) this.#forgetAt(lease);
    return lease;
  }

  #renewAt(lease: Lease, ttlSeconds: number): void {
    lease.timer = setTimeout(() => void this.#renew(lease), (ttlSeconds * 1000) / 2);
    lease.timer.unref?.();
  }

  /** A lease that is not renewed any more is forgotten when it runs out (Vault revokes it then). */
  #forgetAt(lease: Lease): void {
    if (lease.timer) clearTimeout(lease.timer);
    lease.timer = setTimeout(() => this.#held.delete(lease), Math.max(0, lease.expiresAt - this.now()));
    lease.timer.unref?.();
  }

  #retire(lease: Lease, why: string): void {
    if (this.#current.get(lease.secretId) === lease) this.#current.delete(lease.secretId);
    log.info("database lease replaced on the next connection", { secretId: lease.secretId, user: lease.user, why });
    this.#forgetAt(lease);
  }

  async #renew(lease: Lease): Promise<void> {
    if (this.#closed || !this.#held.has(lease)) return;
    // Replaced by a newer lease (taken in this one's last seconds): left to run out for the sessions on it.
    if (this.#current.get(lease.secretId) !== lease) return this.#forgetAt(lease);
    try {
      const signal = AbortSignal.timeout(30_000);
      const token = await this.auth.token(signal);
      const answer = await vaultCall(this.endpoint, { method: "PUT", path: "sys/leases/renew", token, body: { lease_id: lease.leaseId, increment: lease.ttl } }, signal);
      if (answer.status !== 200 || typeof answer.body?.lease_duration !== "number") throw vaultFailure(answer, "sys/leases/renew");
      const ttl: number = answer.body.lease_duration;
      lease.expiresAt = this.now() + ttl * 1000;
      if (!this.#held.has(lease)) return;
      log.info("database lease renewed", { secretId: lease.secretId, user: lease.user, ttlSeconds: ttl });
      // Less than asked: the role's max TTL is near; the next connection takes a new lease.
      if (ttl + 1 < lease.ttl) this.#retire(lease, "the lease reached its max TTL");
      else this.#renewAt(lease, ttl);
    } catch (err) {
      this.#retire(lease, `renewal failed (${(err as StoreError).reason ?? "error"})`);
    }
  }

  async #revokeAll(secretId: string, why: string): Promise<void> {
    this.#current.delete(secretId);
    await Promise.all([...this.#held].filter((l) => l.secretId === secretId).map((l) => this.#revoke(l, why)));
  }

  async #revoke(lease: Lease, why: string): Promise<void> {
    if (lease.timer) clearTimeout(lease.timer);
    this.#held.delete(lease);
    if (this.#current.get(lease.secretId) === lease) this.#current.delete(lease.secretId);
    try {
      const signal = AbortSignal.timeout(5_000);
      const token = await this.auth.token(signal);
      const answer = await vaultCall(this.endpoint, { method: "PUT", path: "sys/leases/revoke", token, body: { lease_id: lease.leaseId } }, signal);
      if (answer.status !== 204 && answer.status !== 200) throw vaultFailure(answer, "sys/leases/revoke");
      log.info("database lease revoked", { secretId: lease.secretId, user: lease.user, why });
    } catch (err) {
      log.warn("database lease not revoked: Vault ends it at its TTL", { secretId: lease.secretId, user: lease.user, why, reason: (err as StoreError).reason ?? "error" });
    }
  }
}
