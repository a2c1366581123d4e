// Reading SQL statements for the database broker (docs/databases.md#statements-reads-and-writes), pure: a Query
// string split into its statements, each statement classified as a read or a write, and the statements that would
// lift a read-only session (or change how the server reads the next ones) found. The broker judges every statement
// with these before it reaches the server, so the reading must agree with the server's on every valid input
// (sqlScanner.ts reads as PostgreSQL's scanner does): where they could differ the answer is the careful one.
//
// A statement that contains a backslash is read twice — once as the server reads it (standard_conforming_strings
// on, PostgreSQL's default) and once with backslash escapes in every string — and the stricter answer wins, so a
// session whose strings are read the old way hides nothing either. Unterminated input (the server would refuse it)
// counts as a write that lifts.
import { asciiLower, COMMA, CLOSE, isSpace, OPEN, scan, SEMICOLON, T, type Tokens } from "./sqlScanner.ts";

/** What one statement does to the database, as far as its text tells. */
export interface StatementNature {
  /** Not on the read list of docs/databases.md#statements-reads-and-writes. */
  write: boolean;
  /** Would make a read-only session writable (or change how credgate must read the session's statements). */
  lifts: boolean;
  /**
   * Sets a client_encoding in which a byte of a multibyte character can be `\` or `'` (SJIS, BIG5, GBK, …):
   * from then on the server would read the bytes credgate judged differently (docs/databases.md#statements-reads-and-writes).
   */
  rereads: boolean;
}

/**
 * Client encodings in which every byte of a multibyte character is ≥ 0x80, so `\`, `'` and `;` are always
 * themselves (PostgreSQL's encoding names, lower-cased without punctuation).
 */
const ASCII_SAFE_ENCODING =
  /^(sqlascii|utf8|unicode|latin(10|[1-9])|iso8859(1[0-6]|[1-9])|(win|windows|cp)(866|874|125[0-8])|win|alt|koi8[ru]?|euc(jp|cn|kr|tw|jis2004)|muleinternal|tcvn(5712)?|vscii|abc)$/;

/** Whether a client_encoding value keeps every ASCII byte itself (`DEFAULT` returns to the session's own). */
export function asciiSafeEncoding(name: string): boolean {
  const key = name.toLowerCase().replace(/[^a-z0-9]/g, "");
  return key === "default" || ASCII_SAFE_ENCODING.test(key);
}

/** Statements that begin a query (after any opening parentheses). */
const QUERY_STARTS = new Set(["select", "values", "table", "with"]);
/** Statements on the read list that are reads whatever follows. */
const ALWAYS_READ = new Set(["show", "fetch", "savepoint", "release", "deallocate", "close", "listen", "unlisten"]);
/** Words that make a query a write: a data-modifying WITH, SELECT … INTO. */
const WRITE_WORDS = new Set(["insert", "update", "delete", "merge", "into"]);
/**
 * Built-in functions that change something when a "read" calls them: sequences, large objects, other sessions,
 * the server, replication, statistics, notifications — and those that run SQL given as text (which could be
 * anything). A function of the database's own can still write: docs/databases.md#statements-reads-and-writes says so.
 */
const WRITING_FUNCTIONS = new Set([
  "nextval",
  "setval",
  "lo_import",
  "lo_export",
  "lo_unlink",
  "lo_create",
  "lo_creat",
  "lo_put",
  "lo_truncate",
  "lo_truncate64",
  "lo_from_bytea",
  "lowrite",
  "pg_terminate_backend",
  "pg_cancel_backend",
  "pg_reload_conf",
  "pg_rotate_logfile",
  "pg_switch_wal",
  "pg_switch_xlog",
  "pg_create_restore_point",
  "pg_promote",
  "pg_start_backup",
  "pg_stop_backup",
  "pg_backup_start",
  "pg_backup_stop",
  "pg_wal_replay_pause",
  "pg_wal_replay_resume",
  "pg_create_physical_replication_slot",
  "pg_create_logical_replication_slot",
  "pg_drop_replication_slot",
  "pg_copy_physical_replication_slot",
  "pg_copy_logical_replication_slot",
  "pg_replication_slot_advance",
  "pg_logical_slot_get_changes",
  "pg_logical_slot_get_binary_changes",
  "pg_logical_emit_message",
  "pg_replication_origin_create",
  "pg_replication_origin_drop",
  "pg_replication_origin_advance",
  "pg_replication_origin_session_setup",
  "pg_replication_origin_session_reset",
  "pg_replication_origin_xact_setup",
  "pg_replication_origin_xact_reset",
  "pg_stat_reset",
  "pg_stat_reset_shared",
  "pg_stat_reset_single_table_counters",
  "pg_stat_reset_single_function_counters",
  "pg_stat_reset_slru",
  "pg_stat_reset_replication_slot",
  "pg_stat_reset_subscription_stats",
  "pg_stat_statements_reset",
  "pg_notify",
  "pg_import_system_collations",
  "pg_file_write",
  "pg_file_rename",
  "pg_file_unlink",
  "pg_file_sync",
  "pg_truncate_visibility_map",
]);
/** Functions that run SQL given as text: whatever that text does, they may do (write and lift). */
const SQL_RUNNING_FUNCTIONS = new Set([
  "query_to_xml",
  "query_to_xml_and_xmlschema",
  "query_to_xmlschema",
  "ts_stat",
  "ts_rewrite",
  "dblink",
  "dblink_exec",
  "dblink_open",
  "dblink_send_query",
]);
/** Settings whose change lifts read-only mode, or changes how the server reads strings (so how credgate must). */
const GUARDED_SETTINGS = new Set(["default_transaction_read_only", "transaction_read_only", "standard_conforming_strings", "client_encoding"]);

interface Calls {
  writes: boolean;
  lifts: boolean;
  rereads: boolean;
}

/** Function calls in tokens [from, to): a name followed by `(`. */
function calls(tk: Tokens, from: number, to: number): Calls {
  const found: Calls = { writes: false, lifts: false, rereads: false };
  for (let i = from; i < to; i++) {
    const kind = tk.kind(i);
    if (kind !== T.Word && kind !== T.Ident && kind !== T.UIdent) continue;
    const open = tk.afterName(i);
    if (open >= to || !tk.punct(open, OPEN)) continue;
    const name = tk.name(i);
    if (name === null) continue;
    if (name === "") {
      // A name that cannot be read: it may be any of them.
      found.writes = found.lifts = found.rereads = true;
      continue;
    }
    if (WRITING_FUNCTIONS.has(name)) found.writes = true;
    else if (SQL_RUNNING_FUNCTIONS.has(name)) found.writes = found.lifts = found.rereads = true;
    else if (name === "set_config") setConfig(tk, open + 1, to, found);
  }
  return found;
}

/**
 * set_config(name, value, is_local): harmless when `name` is a constant naming a setting that does not matter
 * here; a client_encoding only when `value` is a constant safe one. Anything computed may be anything.
 */
function setConfig(tk: Tokens, i: number, to: number, found: Calls): void {
  const name = i + 1 < to && tk.punct(i + 1, COMMA) ? tk.stringValue(i) : null;
  const setting = name === null ? null : asciiLower(name);
  if (setting === null || GUARDED_SETTINGS.has(setting)) found.lifts = true;
  if (setting === null) found.rereads = true;
  else if (setting === "client_encoding") {
    const value = i + 3 < to && tk.punct(i + 3, COMMA) ? tk.stringValue(i + 2) : null;
    if (value === null || !asciiSafeEncoding(value)) found.rereads = true;
  }
}

/** `READ WRITE` among tokens [from, to). */
function readWrite(tk: Tokens, from: number, to: number): boolean {
  for (let i = from; i + 1 < to; i++) if (tk.word(i) === "read" && tk.word(i + 1) === "write") return true;
  return false;
}

/** A query that writes: a data-modifying WITH, SELECT … INTO, FOR UPDATE/SHARE (row locks, refused read-only). */
function queryWrites(tk: Tokens, from: number, to: number): boolean {
  for (let i = from; i < to; i++) {
    const w = tk.word(i);
    if (w === null) continue;
    if (WRITE_WORDS.has(w)) return true;
    if (w === "for") {
      const next = tk.word(i + 1);
      if (next === "share" || next === "key" || next === "no") return true;
    }
  }
  return false;
}

/** Whether one statement's tokens [from, to) make a write (docs/databases.md#statements-reads-and-writes). */
function isWrite(tk: Tokens, from: number, to: number, functionsWrite: boolean): boolean {
  let i = from;
  while (i < to && tk.punct(i, OPEN)) i++;
  const first = tk.word(i);
  if (first === null || i >= to) return true;
  if (QUERY_STARTS.has(first)) return queryWrites(tk, i, to) || functionsWrite;
  // Only a query may stand in parentheses.
  if (i > from) return true;
  if (ALWAYS_READ.has(first)) return false;
  switch (first) {
    case "explain":
      // EXPLAIN ANALYZE runs the statement; an option list may spell it as a "quoted" name too.
      for (let k = i + 1; k < to; k++) {
        const name = tk.name(k);
        if (name === "analyze" || name === "analyse" || name === "") return true;
      }
      return false;
    case "declare": {
      // DECLARE name … CURSOR … FOR <query>: a read when the query is.
      let k = i + 1;
      while (k < to && tk.word(k) !== "cursor") k++;
      while (k < to && tk.word(k) !== "for") k++;
      let q = k + 1;
      while (q < to && tk.punct(q, OPEN)) q++;
      const start = q < to ? tk.word(q) : null;
      return start === null || !QUERY_STARTS.has(start) || queryWrites(tk, q, to) || functionsWrite;
    }
    case "copy": {
      // COPY <table or (query)> TO STDOUT reads; to a file or a program, or FROM anything, it writes.
      let depth = 0;
      for (let k = i + 1; k < to; k++) {
        if (tk.punct(k, OPEN)) depth++;
        else if (tk.punct(k, CLOSE)) depth--;
        else if (depth === 0) {
          const w = tk.word(k);
          if (w === "from") return true;
          if (w === "to") return k + 1 >= to || tk.word(k + 1) !== "stdout" || queryWrites(tk, i + 1, to) || functionsWrite;
        }
      }
      return true;
    }
    case "begin":
      return readWrite(tk, i + 1, to);
    case "start":
      return i + 1 >= to || tk.word(i + 1) !== "transaction" || readWrite(tk, i + 1, to);
    case "commit":
    case "end":
    case "rollback":
    case "abort":
      // COMMIT PREPARED / ROLLBACK PREPARED finish a two-phase transaction, possibly another session's.
      return i + 1 < to && tk.word(i + 1) === "prepared";
    default:
      return true;
  }
}

/** Whether one statement's tokens [from, to) would lift read-only mode. */
function lifts(tk: Tokens, from: number, to: number, functionsLift: boolean): boolean {
  if (functionsLift) return true;
  const at = (k: number) => (k < to ? tk.word(k) : null);
  let i = from + 1;
  switch (at(from)) {
    case "begin":
    case "start":
      return readWrite(tk, i, to);
    case "discard":
      return at(i) === "all";
    case "reset":
      return at(i) === "all" || guardedSetting(tk, i, to);
    case "set": {
      // SET [SESSION | LOCAL] name …, SET SESSION CHARACTERISTICS AS TRANSACTION …, SET TRANSACTION …
      const scope = at(i);
      if (scope === "session" && at(i + 1) === "characteristics") return true;
      if (scope === "session" || scope === "local") i++;
      const what = at(i);
      if (what === "transaction") return readWrite(tk, i, to);
      if (what === "names") return true;
      return guardedSetting(tk, i, to);
    }
    default:
      return false;
  }
}

/** SET [SESSION | LOCAL] client_encoding / NAMES to an encoding that is not ASCII-safe (or not known). */
function rereads(tk: Tokens, from: number, to: number, functionsReread: boolean): boolean {
  if (functionsReread) return true;
  if (tk.word(from) !== "set") return false;
  let i = from + 1;
  const scope = i < to ? tk.word(i) : null;
  if (scope === "session" || scope === "local") i++;
  if (i >= to) return false;
  const name = tk.name(i);
  if (name === "") return true;
  if (name !== "client_encoding" && name !== "names") return false;
  i++;
  if (name === "client_encoding" && (tk.word(i) === "to" || tk.punct(i, 61))) i++;
  if (i + 1 !== to) return true;
  const value = tk.kind(i) === T.Word ? tk.word(i) : tk.stringValue(i);
  return value === null || !asciiSafeEncoding(value);
}

function guardedSetting(tk: Tokens, i: number, to: number): boolean {
  if (i >= to) return false;
  const name = tk.name(i);
  return name === "" || (name !== null && GUARDED_SETTINGS.has(name));
}

function natureIn(sql: string, backslashQuotes: boolean): StatementNature {
  const tk = scan(sql, backslashQuotes);
  if (!tk.complete) return { write: true, lifts: true, rereads: false };
  const nature: StatementNature = { write: false, lifts: false, rereads: false };
  let from = 0;
  for (let i = 0; i <= tk.length; i++) {
    if (i < tk.length && !tk.punct(i, SEMICOLON)) continue;
    if (i > from) {
      const found = calls(tk, from, i);
      if (!nature.write && isWrite(tk, from, i, found.writes)) nature.write = true;
      if (!nature.lifts && lifts(tk, from, i, found.lifts)) nature.lifts = true;
      if (!nature.rereads && rereads(tk, from, i, found.rereads)) nature.rereads = true;
    }
    from = i + 1;
  }
  return nature;
}

/**
 * What a statement does (each statement of it, when it holds several: the strictest answer): `write` unless it
 * is on the read list, `lifts` when it would make a read-only session writable.
 */
export function statementNature(sql: string): StatementNature {
  const nature = natureIn(sql, false);
  if (sql.indexOf("\\") < 0) return nature;
  // Read the old way too (backslash escapes in plain strings): what hides there is caught as well.
  const old = natureIn(sql, true);
  return { write: nature.write || old.write, lifts: nature.lifts || old.lifts, rereads: nature.rereads || old.rereads };
}

export function classifyStatement(statement: string): "read" | "write" {
  return statementNature(statement).write ? "write" : "read";
}

export function liftsReadOnly(statement: string): boolean {
  return statementNature(statement).lifts;
}

function trimSpace(sql: string, from: number, to: number): string {
  while (from < to && isSpace(sql.charCodeAt(from))) from++;
  while (to > from && isSpace(sql.charCodeAt(to - 1))) to--;
  return sql.slice(from, to);
}

/**
 * The statements of a Query string, in order, without their semicolons and surrounding whitespace; statements of
 * nothing but whitespace and comments are left out. A semicolon inside a string, quoted identifier, dollar quote
 * or comment separates nothing; an unterminated one runs to the end (and makes that last statement a write).
 */
export function splitStatements(sql: string): string[] {
  const tk = scan(sql, false);
  const out: string[] = [];
  let from = 0;
  let pieceStart = 0;
  for (let i = 0; i <= tk.length; i++) {
    const last = i === tk.length;
    if (!last && !tk.punct(i, SEMICOLON)) continue;
    // The last piece runs to the end: past its last token when something there never ended.
    if (i > from || (last && !tk.complete)) {
      const piece = trimSpace(sql, pieceStart, last ? sql.length : tk.starts[i]!);
      if (piece !== "") out.push(piece);
    }
    from = i + 1;
    if (!last) pieceStart = tk.ends[i]!;
  }
  return out;
}
