// Pure rules of the `database` secret variant (docs/databases.md#the-database-secret): the shape of
// `injectionConfig.database`, checked field by field in the generic wording of the API's validation messages, its
// stored form (every default filled in), and the checks that need the secret's host pattern as well.
import type { DatabaseConfig, DatabaseTls, DatabaseWrites } from "./records/secrets.ts";
import { isLoopback, parseAddress } from "./addressRules.ts";

export const DATABASE_EXACT_HOST_MESSAGE = "a database secret needs an exact host";
export const DATABASE_TLS_OFF_MESSAGE = "tls off is only allowed for a loopback database";
export const DATABASE_PARTNER_MESSAGE = "database secrets belong to a project or an organization";

/** A database secret whose password is not a Vault lease names its user (a lease names its own). */
export const DATABASE_USER_REQUIRED = "injectionConfig.database.user is required";

export const DEFAULT_DATABASE_PORT = 5432;
const FIELDS = ["engine", "port", "user", "databases", "tls", "readOnly", "writes"] as const;
const TLS: readonly DatabaseTls[] = ["verify-full", "require", "off"];
const WRITES: readonly DatabaseWrites[] = ["allow", "approve", "block"];
const MAX_DATABASES = 100;
/** PostgreSQL's identifiers are at most 63 bytes (NAMEDATALEN − 1); the contract counts characters. */
const NAME_MAX = 63;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const present = (v: unknown) => v !== undefined && v !== null;

/** A name PostgreSQL's startup message can carry: 1-63 characters, no NUL (it is a C string there). */
function nameError(field: string, v: unknown): string | null {
  if (typeof v !== "string") return `${field} must be a string`;
  if (v.length < 1 || v.length > NAME_MAX) return `${field} must be 1-${NAME_MAX} characters`;
  if (v.includes("\u0000")) return `${field} must not contain NUL characters`;
  return null;
}

/** The first failure of `injectionConfig.database`, fields in the order of the variant's table; null when valid. */
export function databaseConfigError(raw: unknown): string | null {
  const at = (f: string) => `injectionConfig.database.${f}`;
  if (!isObject(raw)) return "injectionConfig.database must be an object";
  const unknown = Object.keys(raw).find((k) => !(FIELDS as readonly string[]).includes(k));
  if (unknown !== undefined) return `injectionConfig.database has unknown field "${unknown}"`;
  if (!present(raw.engine)) return `${at("engine")} is required`;
  if (raw.engine !== "postgresql") return `${at("engine")} must be one of: postgresql`;
  if (present(raw.port)) {
    if (typeof raw.port !== "number" || !Number.isInteger(raw.port)) return `${at("port")} must be an integer`;
    if (raw.port < 1 || raw.port > 65535) return `${at("port")} must be between 1 and 65535`;
  }
  // Required unless the secret's storeRef is a vault-db:// lease (services/secrets.ts, DATABASE_USER_REQUIRED).
  if (present(raw.user)) {
    const user = nameError(at("user"), raw.user);
    if (user) return user;
  }
  if (present(raw.databases)) {
    if (!Array.isArray(raw.databases)) return `${at("databases")} must be an array`;
    if (raw.databases.length < 1 || raw.databases.length > MAX_DATABASES) return `${at("databases")} must have 1-${MAX_DATABASES} items`;
    for (let i = 0; i < raw.databases.length; i++) {
      const e = nameError(`${at("databases")}[${i}]`, raw.databases[i]);
      if (e) return e;
    }
  }
  if (present(raw.tls) && !TLS.includes(raw.tls as DatabaseTls)) return `${at("tls")} must be one of: ${TLS.join(", ")}`;
  if (present(raw.readOnly) && typeof raw.readOnly !== "boolean") return `${at("readOnly")} must be a boolean`;
  if (present(raw.writes) && !WRITES.includes(raw.writes as DatabaseWrites)) return `${at("writes")} must be one of: ${WRITES.join(", ")}`;
  return null;
}

/** A database config as it is stored and shown: every default written out, `databases` only when it limits. */
export interface StoredDatabaseConfig {
  engine: "postgresql";
  port: number;
  /** Absent only on a vault-db:// secret, whose leases give the user. */
  user?: string;
  databases?: string[];
  tls: DatabaseTls;
  readOnly: boolean;
  writes: DatabaseWrites;
}

/** The stored form of a valid config (docs/databases.md#the-database-secret): port 5432, tls verify-full, not read-only, writes allowed. */
export function normalizeDatabaseConfig(c: DatabaseConfig): StoredDatabaseConfig {
  const databases = c.databases ?? null;
  return {
    engine: "postgresql",
    port: c.port ?? DEFAULT_DATABASE_PORT,
    ...(c.user !== undefined ? { user: c.user } : {}),
    ...(databases !== null ? { databases: [...new Set(databases)] } : {}),
    tls: c.tls ?? "verify-full",
    readOnly: c.readOnly ?? false,
    writes: c.writes ?? "allow",
  };
}

/** `localhost` or a loopback address (127.0.0.0/8, ::1): the only hosts a database may be reached on without TLS. */
export function isLoopbackHost(host: string): boolean {
  const h = host.trim().toLowerCase().replace(/^\[|\]$/g, "").replace(/\.$/, "");
  if (h === "localhost") return true;
  const address = parseAddress(h);
  return address !== null && isLoopback(address);
}

/** The checks that need the host pattern with the config (flat 400s, docs/databases.md#the-database-secret). */
export function databaseHostError(hostPattern: string, c: DatabaseConfig): string | null {
  const host = hostPattern.trim();
  if (host.includes("*")) return DATABASE_EXACT_HOST_MESSAGE;
  if ((c.tls ?? "verify-full") === "off" && !isLoopbackHost(host)) return DATABASE_TLS_OFF_MESSAGE;
  return null;
}

/**
 * A database secret names its user, unless its password is a Vault database lease: `vault-db://` gives user and
 * password, and a user given anyway is ignored (docs/vault.md#database-leases).
 */
export function databaseUserMissing(c: DatabaseConfig | undefined, storeRef: string | null): boolean {
  return c !== undefined && c.user === undefined && !storeRef?.startsWith("vault-db://");
}
