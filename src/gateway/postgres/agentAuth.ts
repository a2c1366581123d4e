// Who is connecting, and to what (docs/databases.md#authentication): the transport must protect the token (TLS,
// or a loopback peer), the token names the agent, the startup `user` names one of the database credentials the
// agent may use, the `database` must be one the credential allows; then credgate connects to the real server
// with the real password. Every refusal is a Refusal the listener sends as a FATAL ErrorResponse.
import { log } from "../../observability/log.ts";
import type { VaultResolver } from "../../vault/resolver.ts";
import type { AgentCredentials, AgentEntry, DatabaseCredential, GatewaySnapshot } from "../snapshot.ts";
import { isLoopbackPeer } from "./loopbackPeer.ts";
import type { DbSession } from "./dbSession.ts";
import { connectUpstream, UpstreamError, type UpstreamDeps, type UpstreamSession } from "./upstream.ts";
import { credentialChanged, databaseNotAllowed, invalidToken, needsTls, noCredential, noUser, upstreamFailed, type Refusal } from "./refusals.ts";

export interface AgentAuthDeps {
  snapshot: Pick<GatewaySnapshot, "agentForToken" | "credentials">;
  vault: Pick<VaultResolver, "peek" | "resolve">;
  upstream: UpstreamDeps;
}

/** What the listener knows of a connection once its startup message has come. */
export interface StartupFacts {
  params: Map<string, string>;
  /** TLS was negotiated (SSLRequest, or a direct TLS handshake). */
  secure: boolean;
  peer: string | null;
}

/** Whether a running session still stands (see `recheck`). */
export type Recheck = { ok: true } | { ok: false; refusal: Refusal };
const STANDS: Recheck = { ok: true };

export type AuthResult =
  | { ok: true; db: DbSession; upstream: UpstreamSession }
  | { ok: false; refusal: Refusal };

const refused = (refusal: Refusal): AuthResult => ({ ok: false, refusal });

/** Refused before the token is even asked for: it would cross the network in the clear, or there is no user. */
export function refusalBeforePassword(facts: StartupFacts): Refusal | null {
  if (!facts.secure && !isLoopbackPeer(facts.peer)) return needsTls;
  if (!facts.params.get("user")) return noUser;
  return null;
}

/**
 * The database the session opens: the startup `database`, else the credential's first allowed database, else —
 * as PostgreSQL does — the name of the (real) user (docs/databases.md#authentication).
 */
export function chosenDatabase(params: Map<string, string>, credential: DatabaseCredential): string {
  const asked = params.get("database");
  if (asked) return asked;
  return credential.databases?.[0] ?? credential.user;
}

/** The host as logs and approvals show it: without the default port (docs/databases.md#request-logs-and-metrics). */
export function loggedHost(credential: DatabaseCredential): string {
  if (credential.port === 5432) return credential.host;
  return credential.host.includes(":") ? `[${credential.host}]:${credential.port}` : `${credential.host}:${credential.port}`;
}

async function passwordOf(credential: DatabaseCredential, vault: AgentAuthDeps["vault"]): Promise<{ ok: true; value: string } | { ok: false; reason: string }> {
  if (credential.password !== null) return { ok: true, value: credential.password };
  const ref = credential.valueRef;
  if (ref === null) return { ok: false, reason: "the credential has no password" };
  // A vault-db:// lease gives the user too: it is the lease hook's (docs/injection.md#secret-stores), never a cached value.
  if (ref.startsWith("vault-db://")) return { ok: false, reason: "database leases from HashiCorp Vault are not available" };
  const found = vault.peek(ref) ?? (await vault.resolve(ref));
  if (found.ok) return found;
  const where = ref.startsWith("op://") ? "the external vault" : "the secret store";
  return { ok: false, reason: `the password in ${where} is unavailable (${found.reason})` };
}

/** The agent's startup parameters but the two credgate chooses; which of them reach the server is upstream.ts's to say. */
function agentSettings(params: Map<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of params) if (name !== "user" && name !== "database") out[name] = value;
  return out;
}

/**
 * Before each statement of a running session (docs/databases.md#authentication): the token still names the
 * agent (not regenerated, the agent not deleted), the agent may still use the credential, the database is still
 * allowed, and the credential still points where the session was opened. `db` takes the agent's current view
 * (policy rules, secret values for the leak guard, readOnly and writes). Synchronous unless the snapshot is being
 * rebuilt after a change.
 */
export function recheck(snapshot: AgentAuthDeps["snapshot"], db: DbSession, token: string): Recheck | Promise<Recheck> {
  const found = snapshot.agentForToken(token);
  return found instanceof Promise ? found.then((agent) => recheckAgent(snapshot, db, agent)) : recheckAgent(snapshot, db, found);
}

function recheckAgent(snapshot: AgentAuthDeps["snapshot"], db: DbSession, agent: AgentEntry | null): Recheck | Promise<Recheck> {
  if (agent === null || agent.id !== db.agent.id) return { ok: false, refusal: invalidToken };
  const pending = snapshot.credentials(agent);
  return pending instanceof Promise ? pending.then((c) => recheckCredentials(db, agent, c)) : recheckCredentials(db, agent, pending);
}

function recheckCredentials(db: DbSession, agent: AgentEntry, credentials: AgentCredentials): Recheck {
  if (credentials === db.credentials) return STANDS;
  const was = db.credential;
  const credential = credentials.databases.get(was.name);
  if (credential === undefined) return { ok: false, refusal: noCredential(was.name) };
  if (credential.secretId !== was.secretId || credential.host !== was.host || credential.port !== was.port || credential.user !== was.user || credential.tls !== was.tls) {
    return { ok: false, refusal: credentialChanged(was.name) };
  }
  if (credential.databases !== null && !credential.databases.includes(db.database)) return { ok: false, refusal: databaseNotAllowed(db.database) };
  db.agent = agent;
  db.credentials = credentials;
  db.credential = credential;
  return STANDS;
}

/** Token → agent → credential → database → upstream session. `signal` aborts the upstream connection (timeout, the agent left). */
export async function authenticate(facts: StartupFacts, token: string, deps: AgentAuthDeps, signal: AbortSignal): Promise<AuthResult> {
  const found = deps.snapshot.agentForToken(token);
  const agent = found instanceof Promise ? await found : found;
  if (agent === null) return refused(invalidToken);
  const pending = deps.snapshot.credentials(agent);
  const credentials = pending instanceof Promise ? await pending : pending;
  const user = facts.params.get("user")!;
  const credential = credentials.databases.get(user);
  if (credential === undefined) return refused(noCredential(user));
  const database = chosenDatabase(facts.params, credential);
  if (credential.databases !== null && !credential.databases.includes(database)) return refused(databaseNotAllowed(database));
  const password = await passwordOf(credential, deps.vault);
  if (!password.ok) return refused(upstreamFailed(password.reason));
  try {
    const upstream = await connectUpstream(credential, password.value, {
      database,
      startupParams: agentSettings(facts.params),
      readOnly: credential.readOnly || credential.writes === "block",
      deps: deps.upstream,
      signal,
    });
    const db: DbSession = { agent, credential, host: loggedHost(credential), database, credentials };
    return { ok: true, db, upstream };
  } catch (err) {
    if (err instanceof UpstreamError) return refused(upstreamFailed(err.message));
    if (signal.aborted) return refused(upstreamFailed("the connection attempt was abandoned"));
    log.error("database upstream connection failed unexpectedly", { secretId: credential.secretId, error: (err as Error).message });
    return refused(upstreamFailed("internal error"));
  }
}
