// How an agent reaches its databases through credgate (docs/databases.md#connecting): one URL per database
// credential it may use, `postgresql://<secret name>:<agent token>@<gateway host>:<db port>/<database>?sslmode=…`,
// as `CREDGATE_DB_<NAME>_URL` for each, and as the PG* variables libpq and most drivers read when there is exactly
// one. The agent setup (container-config) and `credgate run` give these; `run` rewrites them for its own host.
import { isLoopbackHost } from "./databaseRules.ts";

/** What a URL needs of one credential: its name (the startup user) and its allowed databases (null: any). */
export interface DatabaseUrlCredential {
  name: string;
  databases: string[] | null;
}

export interface DatabaseListener {
  /** The gateway host as the agent reaches it (a name or an address, without brackets). */
  host: string;
  port: number;
  token: string;
  /** The gateway CA file as the agent sees it: TLS to a non-loopback listener is verified against it. */
  caPath: string;
}

/** `CREDGATE_DB_<NAME>_URL`: the name upper-cased, every character but A-Z and 0-9 made `_`. */
export function databaseEnvName(name: string): string {
  return `CREDGATE_DB_${name.toUpperCase().replace(/[^A-Z0-9]/g, "_")}_URL`;
}

/**
 * On loopback the token never leaves the machine: `sslmode=disable`. Elsewhere it is a password on the network:
 * TLS verified against the gateway CA (its leaf names the gateway's host), never `require` (which a
 * man-in-the-middle passes).
 */
function sslParams(l: DatabaseListener): { sslmode: string; sslrootcert?: string } {
  return isLoopbackHost(l.host) ? { sslmode: "disable" } : { sslmode: "verify-full", sslrootcert: l.caPath };
}

/** The URL names the first allowed database (none when any is allowed: the client then picks its own). */
export function databaseUrl(c: DatabaseUrlCredential, l: DatabaseListener): string {
  const host = l.host.includes(":") ? `[${l.host}]` : l.host;
  const database = c.databases?.[0] ?? null;
  const ssl = sslParams(l);
  const query = `sslmode=${ssl.sslmode}${ssl.sslrootcert ? `&sslrootcert=${encodeURIComponent(ssl.sslrootcert)}` : ""}`;
  return `postgresql://${encodeURIComponent(c.name)}:${encodeURIComponent(l.token)}@${host}:${l.port}/${database === null ? "" : encodeURIComponent(database)}?${query}`;
}

/**
 * The variables for a list of credentials: a URL each (by name; two names that make the same variable keep the
 * first in name order), and PGHOST/PGPORT/PGUSER/PGPASSWORD/PGSSLMODE (+ PGSSLROOTCERT, PGDATABASE when the URL
 * names one) when there is exactly one credential.
 */
export function databaseEnv(list: readonly DatabaseUrlCredential[], l: DatabaseListener): Record<string, string> {
  const env: Record<string, string> = {};
  const sorted = [...list].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const c of sorted) {
    const key = databaseEnvName(c.name);
    if (!(key in env)) env[key] = databaseUrl(c, l);
  }
  if (list.length === 1) {
    const only = list[0]!;
    const ssl = sslParams(l);
    env.PGHOST = l.host;
    env.PGPORT = String(l.port);
    env.PGUSER = only.name;
    env.PGPASSWORD = l.token;
    env.PGSSLMODE = ssl.sslmode;
    if (ssl.sslrootcert) env.PGSSLROOTCERT = ssl.sslrootcert;
    if (only.databases?.[0] !== undefined) env.PGDATABASE = only.databases[0];
  }
  return env;
}

/** Whether a variable is one of those above: `credgate run` replaces them with its own. */
export function isDatabaseEnvKey(key: string): boolean {
  return /^CREDGATE_DB_[A-Z0-9_]*_URL$/.test(key) || ["PGHOST", "PGPORT", "PGUSER", "PGPASSWORD", "PGSSLMODE", "PGSSLROOTCERT", "PGDATABASE"].includes(key);
}
