// OAuth authorization-code flow for catalog apps (docs/injection.md#app-connections connection transitions, docs/injection.md#app-connections):
// a signed, expiring `state` that carries the whole flow (no server-side session), PKCE S256 with a verifier
// derived from the state's nonce, the shared callback, and token refresh once for every process and instance (a
// shared cache within the instance, a row lease across instances) written with compare-and-swap.
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { findApp } from "../apps/index.ts";
import type { AppDefinition, AppOAuth } from "../apps/types.ts";
import { ApiError } from "../core/errors.ts";
import { appOrThrow } from "./apps.ts";
import { randomHex } from "../core/ids.ts";
import { log } from "../observability/log.ts";
import { metrics } from "../observability/metrics.ts";
import type { AgentService } from "./agents.ts";
import type { AppConfigService, OAuthClient } from "./appConfigs.ts";
import { CONNECTION_NOT_FOUND, type ConnectionCredential, type ConnectionRow, type ConnectionService } from "./connections.ts";
import type { ServiceDeps } from "./deps.ts";
import type { GrantService } from "./grants.ts";
import type { OrganizationService } from "./organizations.ts";
import type { Outbound } from "./outbound.ts";
import type { SharedCache, SharedCaches } from "../core/sharedCache.ts";
import type { PolicyOwner } from "./policy.ts";
import { underLease } from "./rowLease.ts";

export const STATE_COOKIE = "credgate_oauth_state";
const STATE_TTL_MS = 10 * 60 * 1000;
const TOKEN_TIMEOUT_MS = 15_000;
/** Tokens are refreshed this long before they expire (docs/injection.md#app-connections). */
export const REFRESH_AHEAD_MS = 60_000;
/** After a failed refresh, the next attempt waits this long (the old token keeps being used meanwhile). */
const RETRY_AFTER_FAILURE_MS = 5_000;
const FAILURES_UNTIL_ERROR = 3;
/**
 * How long a refresh refused as a dead refresh token waits for another instance's write of the token that won
 * (its answer came first, its write may still be on its way), looking this often.
 */
const NEWER_WRITE_WAIT_MS = 3_000;
const NEWER_WRITE_POLL_MS = 100;

interface FlowState {
  /** Scope of the connection to create. */
  s: "project" | "organization";
  o: string;
  p: string | null;
  prov: string;
  n: string;
  c: string | null;
  a: string | null;
  exp: number;
}

export interface AuthorizeRequest {
  owner: PolicyOwner;
  provider: string;
  connectionId: string | null;
  agentName: string | null;
}

const b64url = (b: Buffer | string) => Buffer.from(b).toString("base64url");

/** The token endpoint's answer, parsed from JSON or (older GitHub-style) form encoding. */
type TokenAnswer = Record<string, unknown>;

export class TokenEndpointError extends Error {
  constructor(
    message: string,
    /** The OAuth `error` code, e.g. `invalid_grant`. */
    readonly code: string | null,
  ) {
    super(message);
  }
}

export class OAuthService {
  readonly #stateKey: Buffer;
  /** Refreshes in flight, one per connection for the whole instance (docs/operations.md#gateway-workers-and-caches). */
  readonly #refreshing: SharedCache<ConnectionCredential | null>;
  readonly #retryAt = new Map<string, number>();

  constructor(
    private readonly deps: ServiceDeps,
    private readonly configs: AppConfigService,
    private readonly connections: ConnectionService,
    private readonly agents: AgentService,
    private readonly orgs: OrganizationService,
    private readonly grants: GrantService,
    private readonly outbound: Outbound,
    caches: SharedCaches,
  ) {
    this.#stateKey = deps.sealer.deriveKey("oauth-state");
    // Kept 0 s: only the callers waiting share a refresh; the next one finds the stored token fresh and stops there.
    this.#refreshing = caches.define<ConnectionCredential | null>("oauth-refresh", {
      load: (connectionId) => this.refresh(connectionId).then((value) => ({ value, ttlMs: 0 })),
      failed: () => null,
    });
  }

  private get publicUrl(): string {
    return this.deps.config.publicUrl.replace(/\/+$/, "");
  }

  redirectUri(provider: string): string {
    return `${this.publicUrl}/v1/apps/${provider}/callback`;
  }

  // ── state ──────────────────────────────────────────────────────────────────────────────────────────

  private sign(payload: string): string {
    return createHmac("sha256", this.#stateKey).update(payload).digest("base64url");
  }

  private encodeState(state: FlowState): string {
    const payload = b64url(JSON.stringify(state));
    return `${payload}.${this.sign(payload)}`;
  }

  private decodeState(raw: string): FlowState | null {
    const dot = raw.indexOf(".");
    if (dot <= 0) return null;
    const payload = raw.slice(0, dot);
    const given = Buffer.from(raw.slice(dot + 1));
    const expected = Buffer.from(this.sign(payload));
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
    try {
      const state = JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as FlowState;
      return typeof state.exp === "number" && state.exp > Date.now() ? state : null;
    } catch {
      return null;
    }
  }

  /** The PKCE verifier of a flow: derived from its nonce with the state key, so nothing is stored. */
  private verifier(nonce: string): string {
    return createHmac("sha256", this.#stateKey).update(`pkce:${nonce}`).digest("base64url");
  }

  // ── authorize ──────────────────────────────────────────────────────────────────────────────────────

  /** The app, checked for the authorize and callback routes. */
  oauthApp(provider: string): AppDefinition & { oauth: AppOAuth } {
    const app = appOrThrow(provider);
    if (app.connectionType !== "oauth" || !app.oauth) throw ApiError.flat(400, `Provider "${provider}" is not available`);
    return app as AppDefinition & { oauth: AppOAuth };
  }

  private async client(owner: PolicyOwner, app: AppDefinition): Promise<OAuthClient> {
    const client = await this.configs.oauthClient(owner, app.id);
    if (!client) throw ApiError.flat(400, `${app.name} is not configured. Missing required credentials.`);
    return client;
  }

  /** The provider's consent URL and the state cookie's value (docs/injection.md#app-connections authorize). */
  async authorize(req: AuthorizeRequest): Promise<{ location: string; cookie: string }> {
    const app = this.oauthApp(req.provider);
    const client = await this.client(req.owner, app);
    if (req.connectionId && (await this.connections.owned(req.owner, req.connectionId)).provider !== app.id) throw ApiError.envelope(404, CONNECTION_NOT_FOUND);
    const nonce = randomHex(16);
    const state = this.encodeState({
      s: req.owner.scope,
      o: req.owner.organizationId,
      p: req.owner.scope === "project" ? req.owner.projectId : null,
      prov: app.id,
      n: nonce,
      c: req.connectionId,
      a: req.agentName,
      exp: Date.now() + STATE_TTL_MS,
    });
    const url = new URL(app.oauth.authorizeUrl);
    url.searchParams.set("client_id", client.clientId);
    url.searchParams.set("redirect_uri", this.redirectUri(app.id));
    url.searchParams.set("response_type", "code");
    if (app.oauth.scopes.length > 0) url.searchParams.set("scope", app.oauth.scopes.join(app.oauth.scopeSeparator ?? " "));
    url.searchParams.set("state", state);
    for (const [k, v] of Object.entries(app.oauth.authorizeParams ?? {})) url.searchParams.set(k, v);
    if (app.oauth.pkce) {
      url.searchParams.set("code_challenge", createHash("sha256").update(this.verifier(nonce)).digest("base64url"));
      url.searchParams.set("code_challenge_method", "S256");
    }
    const cookie = `${STATE_COOKIE}=${nonce}; HttpOnly; SameSite=Lax; Path=/v1/apps/${app.id}/callback; Max-Age=${STATE_TTL_MS / 1000}${this.publicUrl.startsWith("https:") ? "; Secure" : ""}`;
    return { location: url.toString(), cookie };
  }

  // ── callback ───────────────────────────────────────────────────────────────────────────────────────

  /** Completes a flow; always answers with the dashboard URL to redirect to (success or error). */
  async callback(provider: string, query: URLSearchParams, cookieNonce: string | null): Promise<string> {
    const done = (params: Record<string, string>) => `${this.publicUrl}/app-connect/${encodeURIComponent(provider)}?${new URLSearchParams(params)}`;
    const fail = (message: string) => done({ status: "error", message });
    const app = findApp(provider);
    if (!app?.oauth) return fail(`Unknown provider: ${provider}`);
    const rawState = query.get("state");
    if (!rawState) return fail("Missing state parameter");
    const state = this.decodeState(rawState);
    if (!state || state.prov !== provider || cookieNonce !== state.n) return fail("Invalid state parameter");
    const owner: PolicyOwner =
      state.s === "project" ? { scope: "project", organizationId: state.o, projectId: state.p! } : { scope: "organization", organizationId: state.o };
    if (owner.scope === "project" && !(await this.projectExists(owner))) return fail("Project not found");
    if (query.get("error")) return fail("Authorization was denied");
    const code = query.get("code");
    if (!code) return fail("Missing authorization code");
    let client: OAuthClient;
    let answer: TokenAnswer;
    try {
      client = await this.client(owner, app);
      answer = await this.tokenRequest(app.oauth, client, {
        grant_type: "authorization_code",
        code,
        redirect_uri: this.redirectUri(provider),
        ...(app.oauth.pkce ? { code_verifier: this.verifier(state.n) } : {}),
      });
    } catch (err) {
      return fail((err as Error).message);
    }
    const credential = credentialFrom(answer, null);
    if (!credential) return fail("The token response did not include an access token");
    const label = (await this.accountLabel(app.oauth, answer, credential.accessToken)) ?? app.name;
    const scopes = typeof answer.scope === "string" && answer.scope.trim() ? answer.scope.split(/[\s,]+/).filter(Boolean) : app.oauth.scopes;
    let row: ConnectionRow;
    try {
      row = await this.connections.save(owner, { provider, label, credential, scopes, ...(state.c ? { connectionId: state.c } : {}) });
    } catch (err) {
      return fail((err as Error).message);
    }
    log.info("app connected", { provider, connectionId: row.id, scope: owner.scope, reconnected: row.createdAt !== row.connectedAt });
    const params: Record<string, string> = { status: "success", connectionId: row.id };
    if (state.a) {
      params.agent_name = state.a;
      if (owner.scope === "project") await this.grantToAgent(owner.projectId, state.o, state.a, row.id);
    }
    return done(params);
  }

  private async projectExists(owner: { projectId: string; organizationId: string }): Promise<boolean> {
    return (await this.orgs.getProject(owner.projectId))?.organizationId === owner.organizationId;
  }

  /** `agent_name` naming an agent of the project: the new connection is granted to it in full (decided). */
  private async grantToAgent(projectId: string, organizationId: string, identifier: string, connectionId: string): Promise<void> {
    const agent = await this.agents.findByIdentifier(projectId, identifier);
    if (agent) await this.grants.grantConnection(projectId, organizationId, agent.id, connectionId, { access: "full" });
  }

  private async accountLabel(oauth: AppOAuth, answer: TokenAnswer, accessToken: string): Promise<string | null> {
    const fromToken = oauth.labelFromToken?.(answer);
    if (typeof fromToken === "string" && fromToken.trim()) return fromToken.trim();
    if (!oauth.account) return null;
    try {
      const { url, method = "GET", body } = oauth.account;
      const res = await this.outbound.fetch(url, {
        method,
        headers: {
          authorization: `Bearer ${accessToken}`,
          accept: "application/json",
          "user-agent": "credgate",
          ...(body !== undefined ? { "content-type": "application/json" } : {}),
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        redirect: "manual",
        signal: AbortSignal.timeout(TOKEN_TIMEOUT_MS),
      });
      if (!res.ok) return null;
      const label = oauth.account.label(await res.json());
      return typeof label === "string" && label.trim() ? label.trim() : null;
    } catch {
      return null;
    }
  }

  private async tokenRequest(oauth: AppOAuth, client: OAuthClient, params: Record<string, string>): Promise<TokenAnswer> {
    const basic = oauth.tokenAuth === "basic";
    const body = new URLSearchParams(basic ? params : { ...params, client_id: client.clientId, client_secret: client.clientSecret });
    const headers: Record<string, string> = { "content-type": "application/x-www-form-urlencoded", accept: "application/json", "user-agent": "credgate" };
    if (basic) headers.authorization = `Basic ${Buffer.from(`${client.clientId}:${client.clientSecret}`).toString("base64")}`;
    let res: Response;
    try {
      res = await this.outbound.fetch(oauth.tokenUrl, {
        method: "POST",
        headers,
        body,
        // A redirect would re-send the client secret and the code somewhere else: never followed.
        redirect: "manual",
        signal: AbortSignal.timeout(TOKEN_TIMEOUT_MS),
      });
    } catch (err) {
      throw new TokenEndpointError(`Token exchange failed: ${(err as Error).message}`, null);
    }
    const text = await res.text();
    let answer: TokenAnswer;
    try {
      answer = JSON.parse(text) as TokenAnswer;
    } catch {
      answer = Object.fromEntries(new URLSearchParams(text));
    }
    const code = typeof answer.error === "string" ? answer.error : null;
    if (!res.ok || code) {
      const description = typeof answer.error_description === "string" ? answer.error_description : null;
      throw new TokenEndpointError(`Token exchange failed: ${description ?? code ?? `the token endpoint answered ${res.status}`}`, code);
    }
    return answer;
  }

  // ── refresh ────────────────────────────────────────────────────────────────────────────────────────

  /** True when an OAuth credential is inside the refresh window (or past its expiry). */
  static needsRefresh(credential: ConnectionCredential, now = Date.now()): boolean {
    return credential.kind === "oauth" && credential.expiresAt !== null && now >= credential.expiresAt - REFRESH_AHEAD_MS;
  }

  /**
   * The credential to inject for a connection whose token is due: refreshed once for all concurrent callers of
   * every gateway process (a worker asks the primary) and every instance (the refresh lease). Null when the
   * connection can no longer be used (revoked or expired).
   */
  fresh(connectionId: string): Promise<ConnectionCredential | null> {
    return this.#refreshing.get(connectionId).then((entry) => entry.value);
  }

  private async refresh(connectionId: string): Promise<ConnectionCredential | null> {
    const row = await this.connections.byId(connectionId);
    if (!row || row.status === "revoked" || row.status === "expired") return null;
    const current = this.connections.credential(row);
    if (current.kind !== "oauth" || !OAuthService.needsRefresh(current)) return current;
    const expired = current.expiresAt !== null && Date.now() >= current.expiresAt;
    if (!current.refreshToken) {
      if (!expired) return current;
      await this.connections.setStatus(row.id, "expired", row.refreshFailures);
      return null;
    }
    if ((this.#retryAt.get(row.id) ?? 0) > Date.now()) return current;
    const refreshToken = current.refreshToken;
    // The refresh token goes to the provider once for every instance (docs/injection.md#app-connections): one that
    // rotates refresh tokens with reuse detection revokes the whole grant when a spent one comes back. Under the
    // connection's lease; the other instances wait for what the holder stores and use it.
    const outcome = await underLease(this.deps, `oauth-refresh:${row.id}`, {
      row: "lease-only",
      stored: () => this.#storedSince(row),
      run: () => this.#refreshNow(row, current, refreshToken),
    });
    if (outcome) return outcome.value;
    log.warn("oauth refresh timed out waiting for another instance", { connectionId: row.id, provider: row.provider });
    return current;
  }

  /**
   * What another process stored since `row` was read: its new token, or (its refresh failed) the token as it was,
   * or null when the connection can no longer be used; undefined while the row is unchanged (the refresh is still
   * to do). A failure elsewhere holds this process's next attempt back as its own would.
   */
  async #storedSince(row: ConnectionRow): Promise<ConnectionCredential | null | undefined> {
    const now = await this.connections.byId(row.id);
    if (!now) return null;
    if (now.version === row.version && now.status === row.status && now.refreshFailures === row.refreshFailures) return undefined;
    if (now.version === row.version && now.refreshFailures !== row.refreshFailures) this.#retryAt.set(row.id, Date.now() + RETRY_AFTER_FAILURE_MS);
    return now.status === "connected" || now.status === "error" ? this.connections.credential(now) : null;
  }

  /** The refresh itself, under the lease: the refresh token presented, the answer stored with compare-and-swap. */
  async #refreshNow(row: ConnectionRow, current: Extract<ConnectionCredential, { kind: "oauth" }>, refreshToken: string): Promise<ConnectionCredential | null> {
    const app = findApp(row.provider);
    const owner: PolicyOwner =
      row.scope === "project" ? { scope: "project", organizationId: row.organizationId, projectId: row.projectId! } : { scope: "organization", organizationId: row.organizationId };
    try {
      if (!app?.oauth) throw new TokenEndpointError(`Unknown provider: ${row.provider}`, null);
      const client = await this.configs.oauthClient(owner, app.id);
      if (!client) throw new TokenEndpointError(`${app.name} is not configured`, null);
      const answer = await this.tokenRequest(app.oauth, client, { grant_type: "refresh_token", refresh_token: refreshToken });
      const next = credentialFrom(answer, refreshToken);
      if (!next) throw new TokenEndpointError("The token response did not include an access token", null);
      const { swapped, row: stored } = await this.connections.swapCredential(row.id, row.version, next);
      this.#retryAt.delete(row.id);
      log.info("oauth token refreshed", { connectionId: row.id, provider: row.provider, stored: swapped });
      // Someone else refreshed first: their token is the one to use.
      if (!swapped) return stored && (stored.status === "connected" || stored.status === "error") ? this.connections.credential(stored) : null;
      return next;
    } catch (err) {
      const code = err instanceof TokenEndpointError ? err.code : null;
      log.warn("oauth refresh failed", { connectionId: row.id, provider: row.provider, error: (err as Error).message });
      // GitHub answers a dead refresh token with `bad_refresh_token` instead of the standard `invalid_grant`.
      const revoked = code === "invalid_grant" || code === "bad_refresh_token";
      if (revoked) {
        // Another instance may have refreshed with this refresh token first (providers that rotate refresh tokens
        // refuse the old one): its token is the one to use, and the connection is not revoked. Its answer came before
        // ours, its write may still be on its way: wait for it a moment, and mark the connection revoked only if
        // nothing was written meanwhile (compare-and-swap on the version read).
        const theirs = await this.#newerCredential(row);
        if (theirs !== undefined) return theirs;
        metrics.oauthRefreshFailures.inc({ provider: row.provider, outcome: "revoked" });
        const marked = await this.connections.setStatus(row.id, "revoked", row.refreshFailures + 1, row.version).catch(() => null);
        return marked !== null ? null : ((await this.#newerCredential(row, 0)) ?? null);
      }
      metrics.oauthRefreshFailures.inc({ provider: row.provider, outcome: "retry" });
      const failures = row.refreshFailures + 1;
      await this.connections.setStatus(row.id, failures >= FAILURES_UNTIL_ERROR ? "error" : row.status, failures, row.version).catch(() => null);
      this.#retryAt.set(row.id, Date.now() + RETRY_AFTER_FAILURE_MS);
      return current;
    }
  }

  /**
   * The credential written after `row` was read (another instance's refresh, or a reconnect), waiting up to `waitMs`
   * for it: null when that write left the connection unusable, undefined when nothing was written.
   */
  async #newerCredential(row: ConnectionRow, waitMs = NEWER_WRITE_WAIT_MS): Promise<ConnectionCredential | null | undefined> {
    const deadline = Date.now() + waitMs;
    for (;;) {
      // A read that failed tells nothing: looked at again until the deadline.
      const now = await this.connections.byId(row.id).catch(() => undefined);
      if (now === null) return null;
      if (now !== undefined && now.version !== row.version) return now.status === "connected" || now.status === "error" ? this.connections.credential(now) : null;
      if (Date.now() >= deadline) return undefined;
      await Bun.sleep(NEWER_WRITE_POLL_MS);
    }
  }
}

/** The stored credential from a token answer; a refresh without a new refresh token keeps the old one. */
function credentialFrom(answer: TokenAnswer, previousRefresh: string | null): Extract<ConnectionCredential, { kind: "oauth" }> | null {
  const accessToken = typeof answer.access_token === "string" ? answer.access_token : null;
  if (!accessToken) return null;
  const expiresIn = Number(answer.expires_in);
  return {
    kind: "oauth",
    accessToken,
    refreshToken: typeof answer.refresh_token === "string" && answer.refresh_token ? answer.refresh_token : previousRefresh,
    expiresAt: Number.isFinite(expiresIn) && expiresIn > 0 ? Date.now() + expiresIn * 1000 : null,
    tokenType: typeof answer.token_type === "string" ? answer.token_type : "bearer",
  };
}

