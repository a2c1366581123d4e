// The parsing helpers every settings group of the Config (config.ts) shares: each turns one variable's text into
// a typed value, or refuses it with a ConfigError that names the variable.
export class ConfigError extends Error {}

export type Env = Record<string, string | undefined>;

export function nonEmpty(v: string | undefined): string | null {
  const s = v?.trim();
  return s ? s : null;
}

export function parsePort(name: string, raw: string | number | undefined, fallback: number): number {
  if (raw === undefined || raw === "") return fallback;
  const n = typeof raw === "number" ? raw : Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new ConfigError(`${name} must be a port number (0-65535), got "${raw}"`);
  return n;
}

export function parsePositive(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined || raw.trim() === "") return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new ConfigError(`${name} must be a positive number, got "${raw}"`);
  return n;
}

export function parseOnOff(name: string, raw: string | undefined, fallback: boolean): boolean {
  const value = raw?.trim().toLowerCase();
  if (value === undefined || value === "") return fallback;
  if (value === "on") return true;
  if (value === "off") return false;
  throw new ConfigError(`${name} must be "on" or "off", got "${raw}"`);
}

export function parseUrl(name: string, raw: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new ConfigError(`${name} must be an absolute URL, got "${raw}"`);
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") throw new ConfigError(`${name} must be an http(s) URL, got "${raw}"`);
  return raw.replace(/\/+$/, "");
}

export function parseWhole(name: string, raw: string | undefined, fallback: number, min: number): number {
  if (raw === undefined || raw.trim() === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new ConfigError(`${name} must be a whole number of at least ${min}, got "${raw}"`);
  return n;
}

/** The first variable of `names` that is set (the signal-specific one first), trimmed. */
export function firstSet(env: Env, ...names: string[]): { name: string; value: string } | null {
  for (const name of names) {
    const value = nonEmpty(env[name]);
    if (value !== null) return { name, value };
  }
  return null;
}

/**
 * `key=value,key2=value2` with percent-encoded values (OTEL_EXPORTER_OTLP_HEADERS, OTEL_RESOURCE_ATTRIBUTES).
 * A malformed entry is named by its key only: header values are often credentials.
 */
export function parseKeyValues(name: string, raw: string | undefined): [string, string][] {
  const out: [string, string][] = [];
  for (const item of (raw ?? "").split(",")) {
    if (item.trim() === "") continue;
    const eq = item.indexOf("=");
    const key = (eq < 0 ? item : item.slice(0, eq)).trim();
    if (eq < 0 || key === "") throw new ConfigError(`${name} must be a comma list of key=value pairs: an entry has no ${eq < 0 ? "=" : "key"}`);
    let value: string;
    try {
      value = decodeURIComponent(item.slice(eq + 1).trim());
    } catch {
      throw new ConfigError(`${name}: the value of "${key}" is not valid percent-encoding`);
    }
    out.push([key, value]);
  }
  return out;
}
