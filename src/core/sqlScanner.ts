// PostgreSQL's scanner, as far as the database broker needs it (docs/databases.md#statements-reads-and-writes),
// pure: a statement's tokens — words, quoted identifiers, string constants, punctuation — with comments and
// whitespace dropped, following src/backend/parser/scan.l exactly where it matters (where a literal, identifier,
// dollar quote or comment starts and ends), so that credgate and the server see the same statements.
//
// '…' strings with '' (and, with standard_conforming_strings off, backslash escapes), E'…' with backslash escapes,
// B'…' and X'…' (no escapes at all), N'…', U&'…', and the SQL standard's continuation of a string over a newline
// ('a'\n'b' is one string, read in the first one's mode); "identifiers" and U&"identifiers" with "" escapes;
// $tag$…$tag$ (a tag is an identifier without `$`; `$1` is a parameter; `$` inside an identifier is part of it,
// so `a$$b` opens nothing); -- comments to the end of the line; nested /* */ comments.

export const T = {
  /** An unquoted identifier or key word. */
  Word: 0,
  /** A "quoted identifier". */
  Ident: 1,
  /** A U&"quoted identifier" (decoded on demand: an UESCAPE clause may follow it). */
  UIdent: 2,
  /** A plain '…' string (its value can be read back). */
  Plain: 3,
  /** A $tag$…$tag$ string. */
  Dollar: 4,
  /** Any other string constant: E'…', B'…', X'…', U&'…', or '…' read with backslash escapes. */
  Str: 5,
  /** One character of punctuation or an operator. */
  Punct: 6,
  /** A number or a parameter. */
  Other: 7,
} as const;
export type T = (typeof T)[keyof typeof T];

/**
 * The tokens of one text, as three growing arrays rather than an object each: a multi-megabyte INSERT is
 * millions of tokens, and the gateway reads it once and lets it go.
 */
export class Tokens {
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
export const SEMICOLON = 59;
export const OPEN = 40;
export const CLOSE = 41;
export const COMMA = 44;

export function isSpace(c: number): boolean {
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
export function asciiLower(s: string): string {
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
export function scan(sql: string, backslashQuotes: boolean): Tokens {
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
