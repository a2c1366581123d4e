// Reading SQL the way PostgreSQL's own scanner does (docs/databases.md#statements-reads-and-writes), pure: a Query string split into
// its statements, each statement classified as a read or a write, and the statements that would lift a read-only
// session found. The database broker judges every statement with these before it reaches the server, so the
// reading must agree with the server's on every valid input: where they could differ the answer is the careful
// one (a write; a lift).
//
// The scanner follows src/backend/parser/scan.l: '…' strings with '' (and, with standard_conforming_strings off,
// backslash escapes), E'…' with backslash escapes, B'…' and X'…' (no escapes at all), N'…', U&'…', and the SQL
// standard's continuation of a string over a newline ('a'\n'b' is one string, read in the first one's mode),
// "identifiers" and U&"identifiers" with "" escapes, $tag$…$tag$ (a tag is an identifier without `$`; `$1` is a
// parameter; `$` inside an identifier is part of it, so `a$$b` opens nothing), -- comments to the end of the line,
// nested /* */ comments. A statement that contains a backslash is read twice — once as the server reads it
// (standard_conforming_strings on, PostgreSQL's default) and once with backslash escapes in every string — and
// the stricter answer wins, so a session whose strings are read the old way hides nothing either.
// Unterminated input (the server would refuse it) counts as a write that lifts.

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

const enum T {
  /** An unquoted identifier or key word. */
  Word,
  /** A "quoted identifier". */
  Ident,
  /** A U&"quoted identifier" (decoded on demand: an UESCAPE clause may follow it). */
  UIdent,
  /** A plain '…' string (its value can be read back). */
  Plain,
  /** A $tag$…$tag$ string. */
  Dollar,
  /** Any other string constant: E'…', B'…', X'…', U&'…', or '…' read with backslash escapes. */
  Str,
  /** One character of punctuation or an operator. */
  Punct,
  /** A number or a parameter. */
  Other,
}

/**
 * The tokens of one text, as three growing arrays rather than an object each: a multi-megabyte INSERT is
 * millions of tokens, and the gateway reads it once and lets it go.
 */
class Tokens {
  kinds = new Uint8Array(32);
  starts = new Int32Array(32);
  ends = new Int32Array(32);
  length = 0;
  /** False when a string, identifier, dollar quote or comment runs to the end unterminated. */
  complete = true;

  constructor(readonly sql: string) {}

  push(kind: T, start: number, end: number): void {
    if (this.length === this.kinds.length) {
      const grow = <A extends Uint8Array | Int32Array>(a: A): A => {
        const b = new (a.constructor as new (n: number) => A)(a.length * 2);
        b.set(a);
        return b;
      };
      this.kinds = grow(this.kinds);
      this.starts = grow(this.starts);
      this.ends = grow(this.ends);
    }
    this.kinds[this.length] = kind;
    this.starts[this.length] = start;
    this.ends[this.length] = end;
    this.length++;
  }

  kind(i: number): T | -1 {
    return i < this.length ? (this.kinds[i]! as T) : -1;
  }

  /** Words already read, in lower case (each is asked for several times). */
  #words: (string | undefined)[] = [];

  /** Token `i` in ASCII lower case when it is an unquoted word. */
  word(i: number): string | null {
    if (i >= this.length || this.kinds[i] !== T.Word) return null;
    return (this.#words[i] ??= asciiLower(this.sql.slice(this.starts[i], this.ends[i])));
  }

  punct(i: number, ch: number): boolean {
    return i < this.length && this.kinds[i] === T.Punct && this.sql.charCodeAt(this.starts[i]!) === ch;
  }

  /** The value of a plain string (not continued over lines) or a dollar-quoted one; null otherwise. */
  stringValue(i: number): string | null {
    const kind = this.kind(i);
    const raw = this.sql.slice(this.starts[i], this.ends[i]);
    if (kind === T.Dollar) {
      const tag = raw.indexOf("$", 1) + 1;
      return raw.slice(tag, raw.length - tag);
    }
    if (kind !== T.Plain || !/^'(?:[^']|'')*'$/.test(raw)) return null;
    return raw.slice(1, -1).replace(/''/g, "'");
  }

  /**
   * The name token `i` gives, lower-cased (quoted names too: careful rather than exact), "" when it names
   * nothing knowable (a U&"…" name that does not decode: callers take it for any name), or null (not a name).
   */
  name(i: number): string | null {
    const kind = this.kind(i);
    if (kind === T.Word) return this.word(i);
    const raw = kind === T.Ident || kind === T.UIdent ? this.sql.slice(this.starts[i]! + (kind === T.UIdent ? 3 : 1), this.ends[i]! - 1) : null;
    if (raw === null) return null;
    if (kind === T.Ident) return asciiLower(raw.replace(/""/g, '"'));
    let escape = "\\";
    if (this.word(i + 1) === "uescape") {
      const e = this.stringValue(i + 2);
      if (e === null || e.length !== 1) return "";
      escape = e;
    }
    return asciiLower(decodeUnicode(raw, escape) ?? "");
  }

  /** The token after a name and its optional UESCAPE clause. */
  afterName(i: number): number {
    return this.kind(i) === T.UIdent && this.word(i + 1) === "uescape" ? i + 3 : i + 1;
  }
}

/** String modes of scan.l: xq (plain), xe (backslash escapes), xb/xh (bit strings: no escapes), xus (U&'…'). */
const enum S {
  Plain,
  Escaped,
  Bits,
  Unicode,
}

const QUOTE = 39;
const DQUOTE = 34;
const DOLLAR = 36;
const BACKSLASH = 92;
const SEMICOLON = 59;
const OPEN = 40;
const CLOSE = 41;
const COMMA = 44;

function isSpace(c: number): boolean {
  // scan.l's {space}: [ \t\n\r\f\v] — nothing else (a no-break space is part of an identifier there).
  return c === 32 || (c >= 9 && c <= 13);
}

function isNewline(c: number): boolean {
  return c === 10 || c === 13;
}

function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

/** scan.l's ident_start: [A-Za-z\200-\377_] (every byte of a multibyte character is ≥ \200). */
function isIdentStart(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c === 95 || c >= 128;
}

/** ident_cont adds digits and `$`. */
function isIdentCont(c: number): boolean {
  return isIdentStart(c) || isDigit(c) || c === DOLLAR;
}

/** ASCII-only lower case, as PostgreSQL folds key words (String#toLowerCase would fold the Kelvin sign to k). */
function asciiLower(s: string): string {
  return NON_ASCII.test(s) ? s.replace(/[A-Z]+/g, (m) => m.toLowerCase()) : s.toLowerCase();
}

const NON_ASCII = /[^\x00-\x7f]/;

/** The end of a -- comment: the next newline (not consumed) or the end. */
function lineCommentEnd(sql: string, i: number): number {
  const n = sql.length;
  while (i < n && !isNewline(sql.charCodeAt(i))) i++;
  return i;
}

/**
 * Where a string continues after its closing quote at `q - 1` (scan.l's {quotecontinue}: whitespace holding a
 * newline, -- comments allowed, then a quote): the position after that quote, or -1.
 */
function continuation(sql: string, q: number): number {
  const n = sql.length;
  let sawNewline = false;
  while (q < n) {
    const c = sql.charCodeAt(q);
    if (isNewline(c)) {
      sawNewline = true;
      q++;
    } else if (isSpace(c)) q++;
    else if (c === 45 && sql.charCodeAt(q + 1) === 45) q = lineCommentEnd(sql, q);
    else break;
  }
  return sawNewline && q < n && sql.charCodeAt(q) === QUOTE ? q + 1 : -1;
}

/** The end (after the closing quote) of a string whose inside starts at `i`, or -1 when it never ends. */
function stringEnd(sql: string, i: number, mode: S): number {
  const n = sql.length;
  for (;;) {
    for (;;) {
      if (i >= n) return -1;
      const c = sql.charCodeAt(i);
      if (c === BACKSLASH && mode === S.Escaped) {
        i += 2;
        continue;
      }
      if (c !== QUOTE) {
        i++;
        continue;
      }
      // A doubled quote is a quote inside every kind but bit strings, whose '' ends one string and opens the next.
      if (mode !== S.Bits && sql.charCodeAt(i + 1) === QUOTE) {
        i += 2;
        continue;
      }
      break;
    }
    const next = continuation(sql, i + 1);
    if (next < 0) return i + 1;
    i = next;
  }
}

/** The end (after the closing quote) of a quoted identifier whose inside starts at `i`, or -1. */
function identEnd(sql: string, i: number): number {
  for (;;) {
    const q = sql.indexOf('"', i);
    if (q < 0) return -1;
    if (sql.charCodeAt(q + 1) !== DQUOTE) return q + 1;
    i = q + 2;
  }
}

/** Tokens of `sql`; with `backslashQuotes`, plain strings take backslash escapes (standard_conforming_strings off). */
function scan(sql: string, backslashQuotes: boolean): Tokens {
  const tokens = new Tokens(sql);
  const n = sql.length;
  const plain = backslashQuotes ? S.Escaped : S.Plain;
  let i = 0;
  /** A string from `start` whose inside starts at `inside`; false when it never ends. */
  const string = (start: number, inside: number, mode: S, kind: T): boolean => {
    const end = stringEnd(sql, inside, mode);
    if (end < 0) return false;
    tokens.push(kind, start, end);
    i = end;
    return true;
  };
  const unterminated = () => {
    tokens.complete = false;
    return tokens;
  };
  while (i < n) {
    const c = sql.charCodeAt(i);
    if (isSpace(c)) {
      i++;
      continue;
    }
    const d = i + 1 < n ? sql.charCodeAt(i + 1) : 0;
    if (c === 45 && d === 45) {
      i = lineCommentEnd(sql, i);
      continue;
    }
    if (c === 47 && d === 42) {
      // Nested /* */ comments: /* opens one more wherever it appears inside, */ closes one.
      let depth = 1;
      i += 2;
      while (depth > 0) {
        if (i >= n) return unterminated();
        const x = sql.charCodeAt(i);
        const y = i + 1 < n ? sql.charCodeAt(i + 1) : 0;
        if (x === 42 && y === 47) {
          depth--;
          i += 2;
        } else if (x === 47 && y === 42) {
          depth++;
          i += 2;
        } else i++;
      }
      continue;
    }
    if (c === QUOTE) {
      if (!string(i, i + 1, plain, backslashQuotes ? T.Str : T.Plain)) return unterminated();
      continue;
    }
    if (c === DQUOTE) {
      const end = identEnd(sql, i + 1);
      if (end < 0) return unterminated();
      tokens.push(T.Ident, i, end);
      i = end;
      continue;
    }
    if (c === DOLLAR) {
      if (isDigit(d)) {
        // A parameter, $1.
        let j = i + 1;
        while (j < n && isDigit(sql.charCodeAt(j))) j++;
        tokens.push(T.Other, i, j);
        i = j;
        continue;
      }
      // A dollar quote: $$ or $tag$, the tag an identifier without `$` (not starting with a digit).
      let j = i + 1;
      if (j < n && isIdentStart(sql.charCodeAt(j))) {
        j++;
        while (j < n && sql.charCodeAt(j) !== DOLLAR && isIdentCont(sql.charCodeAt(j))) j++;
      }
      if (j < n && sql.charCodeAt(j) === DOLLAR) {
        const tag = sql.slice(i, j + 1);
        const close = sql.indexOf(tag, j + 1);
        if (close < 0) return unterminated();
        tokens.push(T.Dollar, i, close + tag.length);
        i = close + tag.length;
        continue;
      }
      // A lone `$` (scan.l's {dolqfailed} throws back all but it).
      tokens.push(T.Punct, i, i + 1);
      i++;
      continue;
    }
    if (isIdentStart(c)) {
      let j = i + 1;
      while (j < n && isIdentCont(sql.charCodeAt(j))) j++;
      if (j === i + 1 && j < n) {
        // One letter right before a quote is a string prefix (the longer match wins in scan.l).
        const lower = c | 0x20;
        const next = sql.charCodeAt(j);
        if (next === QUOTE) {
          const mode = lower === 101 ? S.Escaped : lower === 98 || lower === 120 ? S.Bits : lower === 110 ? plain : -1;
          if (mode !== -1) {
            const kind = lower === 110 && !backslashQuotes ? T.Plain : T.Str;
            if (!string(i, j + 1, mode, kind)) return unterminated();
            continue;
          }
        } else if (lower === 117 && next === 38 && j + 1 < n) {
          // U&'…' and U&"…".
          const q = sql.charCodeAt(j + 1);
          if (q === QUOTE) {
            if (!string(i, j + 2, S.Unicode, T.Str)) return unterminated();
            continue;
          }
          if (q === DQUOTE) {
            const end = identEnd(sql, j + 2);
            if (end < 0) return unterminated();
            tokens.push(T.UIdent, i, end);
            i = end;
            continue;
          }
        }
      }
      tokens.push(T.Word, i, j);
      i = j;
      continue;
    }
    if (isDigit(c) || (c === 46 && isDigit(d))) {
      // A number never swallows a letter (so `1e'…'` is 1 then E'…', as scan.l reads it) nor a `$`.
      let j = i;
      while (j < n && (isDigit(sql.charCodeAt(j)) || sql.charCodeAt(j) === 95 || sql.charCodeAt(j) === 46)) j++;
      if ((sql.charCodeAt(j) | 0x20) === 101) {
        let k = j + 1;
        const sign = sql.charCodeAt(k);
        if (sign === 43 || sign === 45) k++;
        if (isDigit(sql.charCodeAt(k))) {
          j = k;
          while (j < n && isDigit(sql.charCodeAt(j))) j++;
        }
      }
      tokens.push(T.Other, i, j);
      i = j;
      continue;
    }
    tokens.push(T.Punct, i, i + 1);
    i++;
  }
  return tokens;
}

/** A U&"…" name decoded with `escape` (\XXXX, \+XXXXXX, doubled escape), or null when it is not valid. */
function decodeUnicode(raw: string, escape: string): string | null {
  const inside = raw.replace(/""/g, '"');
  let out = "";
  for (let i = 0; i < inside.length; i++) {
    const ch = inside[i]!;
    if (ch !== escape) {
      out += ch;
      continue;
    }
    if (inside[i + 1] === escape) {
      out += escape;
      i++;
      continue;
    }
    const plus = inside[i + 1] === "+";
    const digits = inside.slice(i + (plus ? 2 : 1), i + (plus ? 8 : 5));
    if (digits.length !== (plus ? 6 : 4) || !/^[0-9A-Fa-f]+$/.test(digits)) return null;
    const code = parseInt(digits, 16);
    if (code > 0x10ffff) return null;
    out += String.fromCodePoint(code);
    i += plus ? 7 : 4;
  }
  return out;
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
