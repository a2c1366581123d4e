// A fake HashiCorp Vault for the secret-store tests (docs/vault.md): Bun.serve over TLS on loopback (a
// throwaway CA from test/support/upstream.ts) speaking the parts of Vault's real HTTP API credgate uses, with
// Vault's JSON shapes and status codes, so that the official client `node-vault` and credgate's own client get the
// same answers from it (test/unit/fakeVault.test.ts):
//   - KV version 2: GET /v1/<mount>/data/<path> → {data: {data, metadata}}; 404 {"errors":[]} when absent;
//     a KV version 1 mount (`kv1`) answers data/ paths 404 as a real v1 mount does.
//   - token auth: X-Vault-Token checked on every call; unknown, expired or not allowed → 403
//     {"errors":["permission denied"]}; tokens carry a TTL and may be restricted to path prefixes.
//   - AppRole: POST /v1/auth/approle/login {role_id, secret_id} → {auth: {client_token, lease_duration, renewable}}.
//   - token renewal: POST|PUT /v1/auth/token/renew-self → the token's TTL starts again (capped by its max TTL).
//   - namespaces: with `namespace` set, every call must carry X-Vault-Namespace with it (else 403).
//   - the database secrets engine: GET /v1/<dbMount>/creds/<role> REALLY creates a PostgreSQL login role (member
//     of vault_leased, test/support/databaseServer.ts) with a random password and VALID UNTIL the lease's end in the
//     test's real PostgreSQL; PUT /v1/sys/leases/renew extends the lease and the role's VALID UNTIL (capped by the
//     role's max TTL); PUT /v1/sys/leases/revoke — or the lease running out — DROPs the role, so a revoked lease
//     provably cannot log in.
//   - seal()/unseal(): 503 {"errors":["Vault is sealed"]}, as a sealed Vault answers.
// Every call is recorded (method, path, namespace header, X-Vault-Request) for the tests' assertions; leases keep
// their password so tests can check credgate's output never shows it.
import { randomBytes, randomUUID } from "node:crypto";
import type { Server } from "bun";
import type { DatabaseServer } from "./databaseServer.ts";
import { makePki, type TestPki } from "./upstream.ts";

export interface FakeVaultOptions {
  /** Host names the TLS certificate carries (pinned to 127.0.0.1 by CREDGATE_RESOLVE in e2e tests). */
  names?: string[];
  /** A PKI whose leaf carries `names` (the test's own, so one CA file serves all its upstreams); a new one otherwise. */
  pki?: TestPki;
  /** Enterprise namespace every call must name with X-Vault-Namespace; null = none (open source Vault). */
  namespace?: string | null;
  /** AppRole credentials and the TTLs of the tokens a login issues. */
  approle?: { roleId: string; secretId: string; ttlSeconds: number; maxTtlSeconds: number };
  /** The database secrets engine: its mount, the PostgreSQL server it manages, and its roles' TTLs. */
  database?: { mount: string; server: DatabaseServer; roles: Record<string, { ttlSeconds: number; maxTtlSeconds: number }> };
}

export interface RecordedCall {
  method: string;
  path: string;
  namespace: string | null;
  vaultRequest: string | null;
  status: number;
}

interface TokenEntry {
  /** Epoch ms; null = no expiry (the root token). */
  expiresAt: number | null;
  ttlSeconds: number;
  /** Epoch ms after which no renewal extends it. */
  maxEndsAt: number | null;
  /** Path prefixes (after /v1/) the token may call; null = every path. */
  paths: string[] | null;
}

export interface FakeLease {
  leaseId: string;
  role: string;
  username: string;
  /** For the tests' "never logged" checks. */
  password: string;
  issuedAt: number;
  expiresAt: number;
  maxEndsAt: number;
  renewals: number;
  revoked: boolean;
  timer: ReturnType<typeof setTimeout> | null;
}

export interface FakeVault {
  /** https://<name>:<port> (the first name) */
  url: string;
  port: number;
  pki: TestPki;
  rootToken: string;
  calls: RecordedCall[];
  leases: FakeLease[];
  /** Stores a KV v2 secret (a new version each time). */
  putKv(mount: string, path: string, data: Record<string, unknown>): void;
  /** A token restricted to path prefixes (after /v1/), with a TTL (0 = none). */
  addToken(opts?: { paths?: string[]; ttlSeconds?: number }): string;
  callsTo(path: string, method?: string): RecordedCall[];
  /** Revokes every token but the root token (a renewal with one then fails 403, as after `vault token revoke`). */
  revokeTokens(): void;
  seal(): void;
  unseal(): void;
  /** Stops answering (requests wait) until called with false: a Vault that hangs. */
  hang(on: boolean): void;
  /** Whether a lease's role still exists in PostgreSQL. */
  roleExists(username: string): Promise<boolean>;
  stop(): Promise<void>;
}

const json = (status: number, body: unknown) => new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
const errors = (status: number, ...messages: string[]) => json(status, { errors: messages });
const denied = () => errors(403, "permission denied");

/** Vault's response envelope. */
function envelope(fields: { data?: unknown; auth?: unknown; lease_id?: string; lease_duration?: number; renewable?: boolean; warnings?: string[] | null; mount_type?: string }) {
  return {
    request_id: randomUUID(),
    lease_id: fields.lease_id ?? "",
    renewable: fields.renewable ?? false,
    lease_duration: fields.lease_duration ?? 0,
    data: fields.data ?? null,
    wrap_info: null,
    warnings: fields.warnings ?? null,
    auth: fields.auth ?? null,
    mount_type: fields.mount_type ?? "",
  };
}

const sqlString = (s: string) => `'${s.replaceAll("'", "''")}'`;
const ident = (s: string) => `"${s.replaceAll('"', '""')}"`;

export async function startFakeVault(opts: FakeVaultOptions = {}): Promise<FakeVault> {
  const names = opts.names ?? ["vault.test"];
  const pki = opts.pki ?? makePki([...names, "127.0.0.1"]);
  const namespace = opts.namespace ?? null;
  const rootToken = `hvs.root${randomBytes(12).toString("hex")}`;
  const tokens = new Map<string, TokenEntry>([[rootToken, { expiresAt: null, ttlSeconds: 0, maxEndsAt: null, paths: null }]]);
  const kv = new Map<string, { data: Record<string, unknown>; version: number; created: string }>();
  const calls: RecordedCall[] = [];
  const leases: FakeLease[] = [];
  let sealed = false;
  let hanging: Promise<void> | null = null;
  let release = () => {};

  const tokenOk = (token: string | null, path: string): TokenEntry | null => {
    if (token === null) return null;
    const entry = tokens.get(token);
    if (!entry) return null;
    if (entry.expiresAt !== null && entry.expiresAt <= Date.now()) {
      tokens.delete(token);
      return null;
    }
    if (entry.paths !== null && !entry.paths.some((p) => path.startsWith(p))) return null;
    return entry;
  };

  const issueToken = (ttlSeconds: number, maxTtlSeconds: number): string => {
    const token = `hvs.${randomBytes(18).toString("base64url")}`;
    const now = Date.now();
    tokens.set(token, { expiresAt: ttlSeconds > 0 ? now + ttlSeconds * 1000 : null, ttlSeconds, maxEndsAt: maxTtlSeconds > 0 ? now + maxTtlSeconds * 1000 : null, paths: null });
    return token;
  };

  const admin = (sql: string, database = "postgres") => opts.database!.server.admin(sql, database);

  const dropRole = async (lease: FakeLease) => {
    if (lease.revoked) return;
    lease.revoked = true;
    if (lease.timer) clearTimeout(lease.timer);
    const db = opts.database!.server;
    // What the role may own in either database goes to the superuser first: DROP ROLE refuses an owner.
    for (const database of [db.database, db.otherDatabase]) {
      await admin(`REASSIGN OWNED BY ${ident(lease.username)} TO postgres; DROP OWNED BY ${ident(lease.username)}`, database).catch(() => {});
    }
    await admin(`DROP ROLE IF EXISTS ${ident(lease.username)}`);
  };

  // Vault revokes a lease when it runs out, as the database engine's revocation does.
  const armExpiry = (lease: FakeLease) => {
    if (lease.timer) clearTimeout(lease.timer);
    lease.timer = setTimeout(() => void dropRole(lease).catch(() => {}), Math.max(0, lease.expiresAt - Date.now()));
  };

  const validUntil = (ms: number) => new Date(ms).toISOString();

  async function createCreds(mount: string, role: string): Promise<Response> {
    const engine = opts.database;
    const settings = engine?.mount === mount ? engine.roles[role] : undefined;
    if (!engine || !settings) return errors(400, `unknown role: ${role}`);
    const now = Date.now();
    const username = `v-approle-${role}-${randomBytes(6).toString("hex")}-${Math.floor(now / 1000)}`.slice(0, 63);
    const password = `A1a-${randomBytes(15).toString("base64url")}`;
    const expiresAt = now + settings.ttlSeconds * 1000;
    await admin(`CREATE ROLE ${ident(username)} LOGIN PASSWORD ${sqlString(password)} VALID UNTIL ${sqlString(validUntil(expiresAt))} IN ROLE vault_leased`);
    const lease: FakeLease = {
      leaseId: `${mount}/creds/${role}/${randomBytes(12).toString("base64url")}`,
      role,
      username,
      password,
      issuedAt: now,
      expiresAt,
      maxEndsAt: now + settings.maxTtlSeconds * 1000,
      renewals: 0,
      revoked: false,
      timer: null,
    };
    leases.push(lease);
    armExpiry(lease);
    return json(200, envelope({ lease_id: lease.leaseId, renewable: true, lease_duration: settings.ttlSeconds, data: { username, password } }));
  }

  async function renewLease(body: Record<string, unknown>): Promise<Response> {
    const lease = leases.find((l) => l.leaseId === body.lease_id && !l.revoked && l.expiresAt > Date.now());
    if (!lease) return errors(400, "lease not found");
    const settings = opts.database!.roles[lease.role]!;
    const now = Date.now();
    const wanted = typeof body.increment === "number" && body.increment > 0 ? body.increment : settings.ttlSeconds;
    const ends = Math.min(now + wanted * 1000, lease.maxEndsAt);
    const duration = Math.max(0, Math.floor((ends - now) / 1000));
    lease.expiresAt = ends;
    lease.renewals++;
    await admin(`ALTER ROLE ${ident(lease.username)} VALID UNTIL ${sqlString(validUntil(ends))}`);
    armExpiry(lease);
    const warnings = duration < wanted ? ["TTL of \"" + wanted + "s\" exceeded the effective max_ttl of \"" + duration + "s\"; TTL value is capped accordingly"] : null;
    return json(200, { ...envelope({ warnings }), lease_id: lease.leaseId, renewable: true, lease_duration: duration });
  }

  async function revokeLease(body: Record<string, unknown>): Promise<Response> {
    const lease = leases.find((l) => l.leaseId === body.lease_id);
    // Vault answers 204 for an unknown lease too (revocation is idempotent).
    if (lease) await dropRole(lease);
    return new Response(null, { status: 204 });
  }

  async function route(req: Request, path: string, token: string | null): Promise<Response> {
    if (sealed) return errors(503, "Vault is sealed");
    const method = req.method;
    const write = method === "POST" || method === "PUT";
    const body = write ? ((await req.json().catch(() => ({}))) as Record<string, unknown>) : {};

    if (path === "auth/approle/login" && write) {
      const approle = opts.approle;
      if (!approle || body.role_id !== approle.roleId || body.secret_id !== approle.secretId) return errors(400, "invalid role or secret ID");
      const clientToken = issueToken(approle.ttlSeconds, approle.maxTtlSeconds);
      return json(200, envelope({ auth: { client_token: clientToken, accessor: randomBytes(12).toString("hex"), policies: ["default", "credgate"], token_policies: ["default", "credgate"], metadata: { role_name: "credgate" }, lease_duration: approle.ttlSeconds, renewable: true, entity_id: randomUUID(), token_type: "service", orphan: true } }));
    }

    const entry = tokenOk(token, path);
    if (!entry) return denied();

    if (path === "auth/token/renew-self" && write) {
      if (entry.expiresAt === null) return errors(400, "lease is not renewable");
      const now = Date.now();
      const wanted = typeof body.increment === "number" && body.increment > 0 ? body.increment : entry.ttlSeconds;
      const ends = entry.maxEndsAt === null ? now + wanted * 1000 : Math.min(now + wanted * 1000, entry.maxEndsAt);
      entry.expiresAt = ends;
      const duration = Math.max(0, Math.floor((ends - now) / 1000));
      return json(200, envelope({ auth: { client_token: token, accessor: "", policies: ["default", "credgate"], token_policies: ["default", "credgate"], metadata: null, lease_duration: duration, renewable: true, token_type: "service", orphan: true } }));
    }
    if (path === "sys/leases/renew" && write) return renewLease(body);
    if (path === "sys/leases/revoke" && write) return revokeLease(body);

    const creds = /^([^/]+)\/creds\/([^/]+)$/.exec(path);
    if (creds && method === "GET") return createCreds(creds[1]!, creds[2]!);

    const data = /^([^/]+)\/data\/(.+)$/.exec(path);
    if (data && method === "GET") {
      const [, mount, secretPath] = data;
      // A KV version 1 mount has no data/ prefix: its data/<path> is just another, absent, key.
      const found = mount === "kv1" ? undefined : kv.get(`${mount}/${secretPath}`);
      if (!found) return errors(404);
      return json(200, envelope({ data: { data: found.data, metadata: { created_time: found.created, custom_metadata: null, deletion_time: "", destroyed: false, version: found.version } }, mount_type: "kv" }));
    }
    return errors(404);
  }

  let server: Server<unknown> | null = null;
  const serve = (port: number) =>
    Bun.serve({
      port,
      hostname: "127.0.0.1",
      tls: { cert: Bun.file(pki.certFile), key: Bun.file(pki.keyFile) },
      async fetch(req) {
        const url = new URL(req.url);
        const path = decodeURIComponent(url.pathname.replace(/^\/v1\//, ""));
        const ns = req.headers.get("x-vault-namespace");
        const call: RecordedCall = { method: req.method, path: url.pathname, namespace: ns, vaultRequest: req.headers.get("x-vault-request"), status: 0 };
        calls.push(call);
        if (hanging) await hanging;
        let res: Response;
        if (!url.pathname.startsWith("/v1/")) res = errors(404);
        // A token of one namespace means nothing in another (or in the root namespace).
        else if ((ns ?? null) !== namespace && (ns ?? "").replace(/\/$/, "") !== namespace) res = path === "auth/approle/login" ? errors(400, "invalid role or secret ID") : denied();
        else res = await route(req, path, req.headers.get("x-vault-token")).catch((err: Error) => errors(500, err.message));
        call.status = res.status;
        return res;
      },
    });
  server = serve(0);
  const port = server.port!;
  return {
    url: `https://${names[0]}:${port}`,
    port,
    pki,
    rootToken,
    calls,
    leases,
    putKv(mount, path, data) {
      const key = `${mount}/${path}`;
      const version = (kv.get(key)?.version ?? 0) + 1;
      kv.set(key, { data, version, created: new Date().toISOString() });
    },
    addToken(o = {}) {
      const token = issueToken(o.ttlSeconds ?? 0, 0);
      tokens.get(token)!.paths = o.paths ?? null;
      return token;
    },
    callsTo(path, method) {
      return calls.filter((c) => c.path === path && (method === undefined || c.method === method));
    },
    revokeTokens() {
      for (const token of [...tokens.keys()]) if (token !== rootToken) tokens.delete(token);
    },
    seal() {
      sealed = true;
    },
    unseal() {
      sealed = false;
    },
    hang(on) {
      if (on && !hanging) hanging = new Promise((r) => (release = r));
      if (!on && hanging) {
        hanging = null;
        release();
      }
    },
    async roleExists(username) {
      const rows = await admin(`SELECT 1 FROM pg_roles WHERE rolname = ${sqlString(username)}`);
      return rows.length > 0;
    },
    async stop() {
      release();
      for (const l of leases) if (l.timer) clearTimeout(l.timer);
      await server?.stop(true);
    },
  };
}
