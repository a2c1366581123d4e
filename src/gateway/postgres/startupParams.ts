// Which of the agent's startup parameters reach the real server (docs/databases.md#upstream-tls-and-authentication).
// PostgreSQL takes any run-time setting as a startup parameter, and a named one is applied after the `options` string,
// so an agent passing `default_transaction_read_only=off` (or `-c session_preload_libraries=…` in its options, or
// `replication=database`) would undo or escape what credgate set. Only settings that change how results look or how
// long a statement may run pass; the agent's `options` are read for those same settings (`-c name=value`,
// `--name=value`) and the rest of them dropped. A client encoding whose multibyte characters may contain an ASCII quote
// or backslash byte (SJIS, BIG5, GBK, UHC, GB18030, JOHAB) is refused: the server would read a statement's literals
// differently from the statement judge.
import { asciiSafeEncoding } from "../../core/sqlStatements.ts";

/** Settings an agent may choose (lower case; PostgreSQL's names are case-insensitive). */
const PASSED = new Set([
  "application_name",
  "client_encoding",
  "datestyle",
  "intervalstyle",
  "timezone",
  "extra_float_digits",
  "bytea_output",
  "client_min_messages",
  "search_path",
  "statement_timeout",
  "lock_timeout",
  "idle_in_transaction_session_timeout",
  "idle_session_timeout",
]);

/**
 * Why a server setting would make the server read statements differently from credgate's statement checks, or
 * null. The relay watches the server's ParameterStatus messages (both settings are reported whenever they change)
 * and ends a guarded session on a reason (docs/databases.md#the-relay): `standard_conforming_strings = off` makes
 * `\'` an escaped quote inside '…' literals, and a client encoding such as SJIS lets a multibyte character end in
 * a backslash byte, so a statement credgate reads as one literal can hide another statement from it.
 */
export function unsafeForStatementChecks(name: string, value: string): string | null {
  const key = name.toLowerCase();
  if (key === "standard_conforming_strings" && value.toLowerCase() !== "on") return "standard_conforming_strings is off";
  if (key === "client_encoding" && !asciiSafeEncoding(value)) return `client_encoding is ${value}`;
  return null;
}

/** PostgreSQL's own splitting of `options` (pg_split_opts): whitespace separates, a backslash keeps the next character. */
function splitOptions(options: string): string[] {
  const out: string[] = [];
  let current = "";
  let has = false;
  for (let i = 0; i < options.length; i++) {
    const c = options[i]!;
    if (c === "\\" && i + 1 < options.length) {
      current += options[++i];
      has = true;
    } else if (/\s/.test(c)) {
      if (has) out.push(current);
      current = "";
      has = false;
    } else {
      current += c;
      has = true;
    }
  }
  if (has) out.push(current);
  return out;
}

/** The `name=value` settings of an `options` string (`-c name=value`, `-cname=value`, `--name=value`). */
function settingsOf(options: string): [string, string][] {
  const words = splitOptions(options);
  const out: [string, string][] = [];
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    const setting = w === "-c" ? words[++i] : w.startsWith("-c") ? w.slice(2) : w.startsWith("--") ? w.slice(2) : undefined;
    const eq = setting?.indexOf("=") ?? -1;
    if (setting !== undefined && eq > 0) out.push([setting.slice(0, eq).replace(/-/g, "_"), setting.slice(eq + 1)]);
  }
  return out;
}

/**
 * The startup message's parameters for the real server: the credential's user, the database, credgate's own
 * options (read-only when asked), then the agent's settings that may pass. An error names a refused setting.
 */
export function upstreamStartupParams(
  user: string,
  database: string,
  agent: Record<string, string>,
  readOnly: boolean,
): { params: Record<string, string> } | { error: string } {
  const params: Record<string, string> = { user, database };
  if (readOnly) params.options = "-c default_transaction_read_only=on";
  const chosen = new Map<string, [string, string]>();
  const consider = (name: string, value: string) => {
    const key = name.toLowerCase();
    if (PASSED.has(key)) chosen.set(key, [name, value]);
  };
  if (agent.options !== undefined) for (const [name, value] of settingsOf(agent.options)) consider(name, value);
  for (const [name, value] of Object.entries(agent)) consider(name, value);
  for (const [key, [name, value]] of chosen) {
    if (key === "client_encoding" && !asciiSafeEncoding(value)) {
      return { error: `credgate does not pass client_encoding ${value}: its multibyte characters can hide quotes from credgate's statement checks (use UTF8)` };
    }
    if (value.includes("\0")) continue;
    params[name] = value;
  }
  return { params };
}
