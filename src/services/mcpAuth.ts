// The OAuth side of MCP servers (docs/mcp.md#the-login): the login credgate runs (services/mcp/login.ts) and the
// refresh of its tokens, as app connections refresh theirs: 60 s before expiry, once for all the callers of every
// gateway process of the instance (a shared cache) and every instance on the database (the server's row lease,
// rowLease.ts: the refresh token reaches the authorization server once), written with compare-and-swap; a failed
// refresh keeps using the old token and moves the status (three failures → `error`, a refused refresh token →
// `revoked`).
import { ApiError } from "../core/errors.ts";
import type { SharedCache, SharedCaches } from "../core/sharedCache.ts";
import { log } from "../observability/log.ts";
import type { ServiceDeps } from "./deps.ts";
import type { McpCredential } from "./mcp/credential.ts";
import { McpLogin, tokenRequest, TokenRefused } from "./mcp/login.ts";
import type { McpServerRow, McpServerService } from "./mcpServers.ts";
import { REFRESH_AHEAD_MS } from "./oauth.ts";
import { underLease } from "./rowLease.ts";

const RETRY_AFTER_FAILURE_MS = 5_000;
const FAILURES_UNTIL_ERROR = 3;
/** How long a refresh refused as `invalid_grant` waits for another instance's write of the token that won. */
const NEWER_WRITE_POLLS = 10;
const NEWER_WRITE_POLL_MS = 100;

export class McpAuthService {
  readonly login: McpLogin;
  readonly #refreshing: SharedCache<McpCredential | null>;
  readonly #retryAt = new Map<string, number>();

  constructor(
    private readonly deps: ServiceDeps,
    private readonly servers: McpServerService,
    caches: SharedCaches,
  ) {
    this.login = new McpLogin(deps, servers);
    // Kept 0 s: only the callers waiting share a refresh; the next one finds the stored token fresh.
    this.#refreshing = caches.define<McpCredential | null>("mcp-refresh", {
      load: (serverId) => this.#refresh(serverId).then((value) => ({ value, ttlMs: 0 })),
      failed: () => null,
    });
  }

  /** True when an OAuth token is inside the refresh window (or past its expiry). */
  static needsRefresh(credential: McpCredential | null, now = Date.now()): boolean {
    return credential?.kind === "oauth" && credential.expiresAt !== null && now >= credential.expiresAt - REFRESH_AHEAD_MS;
  }

  /**
   * The credential to send for a server whose token is due: refreshed once for all concurrent callers of every
   * gateway process. Null when the server can no longer be used (revoked, or expired without a refresh token).
   */
  fresh(serverId: string): Promise<McpCredential | null> {
    return this.#refreshing.get(serverId).then((entry) => entry.value);
  }

  /** The server's credential now, refreshed first when it is due. */
  async current(row: McpServerRow): Promise<McpCredential | null> {
    const credential = this.servers.credential(row);
    return McpAuthService.needsRefresh(credential) ? this.fresh(row.id) : credential;
  }

  /** `refresh-tools`: lists the tools again with the current credential. */
  async refreshTools(row: McpServerRow): Promise<McpServerRow> {
    const credential = await this.current(row);
    if (!credential) throw ApiError.envelope(400, "Connect the MCP server first: credgate holds no token for it");
    return this.servers.discoverTools(row, credential);
  }

  /** A credential written after `row` was read (another instance's refresh), waiting up to a second for it. */
  async #newerCredential(row: McpServerRow): Promise<McpCredential | null> {
    for (let i = 0; i < NEWER_WRITE_POLLS; i++) {
      const now = await this.servers.byId(row.id).catch(() => null);
      if (!now) return null;
      if (now.version !== row.version) return now.status === "connected" || now.status === "error" ? this.servers.credential(now) : null;
      await Bun.sleep(NEWER_WRITE_POLL_MS);
    }
    return null;
  }

  async #refresh(serverId: string): Promise<McpCredential | null> {
    const row = await this.servers.byId(serverId);
    if (!row || row.status === "revoked") return null;
    const current = this.servers.credential(row);
    if (current?.kind !== "oauth" || !McpAuthService.needsRefresh(current)) return current;
    const expired = current.expiresAt !== null && Date.now() >= current.expiresAt;
    if (!current.refreshToken) {
      if (!expired) return current;
      await this.servers.setStatus(row.id, "revoked", row.refreshFailures, "The access token expired and the server gave no refresh token: connect again");
      return null;
    }
    if ((this.#retryAt.get(row.id) ?? 0) > Date.now()) return current;
    const refreshToken = current.refreshToken;
    // Once for every instance (docs/mcp.md#the-login): a spent refresh token presented again can revoke the whole
    // grant. Under the server's lease; the other instances wait for what the holder stores and use it.
    const outcome = await underLease(this.deps, `mcp-refresh:${row.id}`, {
      row: "lease-only",
      stored: () => this.#storedSince(row),
      run: () => this.#refreshNow(row, current, refreshToken),
    });
    if (outcome) return outcome.value;
    log.warn("mcp token refresh timed out waiting for another instance", { mcpServerId: row.id });
    return current;
  }

  /**
   * What another process stored since `row` was read: its new token, or (its refresh failed) the token as it was,
   * or null when the server can no longer be used; undefined while the row is unchanged (the refresh is still to do).
   */
  async #storedSince(row: McpServerRow): Promise<McpCredential | null | undefined> {
    const now = await this.servers.byId(row.id);
    if (!now) return null;
    if (now.version === row.version && now.status === row.status && now.refreshFailures === row.refreshFailures) return undefined;
    if (now.version === row.version && now.refreshFailures !== row.refreshFailures) this.#retryAt.set(row.id, Date.now() + RETRY_AFTER_FAILURE_MS);
    return now.status === "connected" || now.status === "error" ? this.servers.credential(now) : null;
  }

  /** The refresh itself, under the lease: the refresh token presented, the answer stored with compare-and-swap. */
  async #refreshNow(row: McpServerRow, current: Extract<McpCredential, { kind: "oauth" }>, refreshToken: string): Promise<McpCredential | null> {
    const client = this.servers.oauthClient(row);
    try {
      if (!client?.endpoints) throw new TokenRefused("the OAuth client of this server is missing: connect again", null);
      const next = await tokenRequest(this.servers.fetch, client, { grant_type: "refresh_token", refresh_token: refreshToken }, refreshToken);
      const { swapped, row: stored } = await this.servers.swapCredential(row.id, row.version, next);
      this.#retryAt.delete(row.id);
      log.info("mcp token refreshed", { mcpServerId: row.id, stored: swapped });
      if (!swapped) return stored && (stored.status === "connected" || stored.status === "error") ? this.servers.credential(stored) : null;
      return next;
    } catch (err) {
      const code = err instanceof TokenRefused ? err.code : null;
      const message = (err as Error).message;
      log.warn("mcp token refresh failed", { mcpServerId: row.id, error: message });
      if (code === "invalid_grant") {
        // Another instance may have refreshed with this refresh token first (the server rotated it): its token is
        // the one to use. Its answer came before ours, its write may still be on its way: wait for it a moment,
        // and mark the server revoked only if nothing was written meanwhile (compare-and-swap on the version).
        const theirs = await this.#newerCredential(row);
        if (theirs) return theirs;
        const revoked = await this.servers
          .setStatus(row.id, "revoked", row.refreshFailures + 1, `The authorization server refused the refresh token: connect again (${message})`, row.version)
          .catch(() => false);
        return revoked ? null : ((await this.#newerCredential(row)) ?? null);
      }
      const failures = row.refreshFailures + 1;
      await this.servers.setStatus(row.id, failures >= FAILURES_UNTIL_ERROR ? "error" : row.status, failures, `Refreshing the token failed: ${message}`, row.version).catch(() => {});
      this.#retryAt.set(row.id, Date.now() + RETRY_AFTER_FAILURE_MS);
      return current;
    }
  }
}
