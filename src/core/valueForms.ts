// The forms a credential value takes on the wire, pure: how a placeholder's value is written into each place of a
// request (docs/injection.md#placeholders), and every form in which the echo guard (docs/guards.md#echo-guard)
// and the credential leak guard (docs/guards.md#credential-leak-guard) look for a value.

/** Every byte outside `[A-Za-z0-9._~-]` as `%XX` (upper-case hex): what a URL path or query can carry as data. */
export function percentEncode(value: string): string {
  let out = "";
  for (const b of Buffer.from(value, "utf8")) {
    const unreserved = (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a) || b === 0x2d || b === 0x2e || b === 0x5f || b === 0x7e;
    out += unreserved ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

/** `application/x-www-form-urlencoded` (the WHATWG serializer: `+` for space, `*-._` and alphanumerics kept). */
export function formEncode(value: string): string {
  return new URLSearchParams([["", value]]).toString().slice(1);
}

/** The inside of a JSON string holding `value`, as JSON.stringify writes it (no quotes around it). */
export function jsonEscape(value: string): string {
  return JSON.stringify(value).slice(1, -1);
}

/** How one JSON encoder writes strings: the escapes beyond the mandatory `"`, `\` and control characters. */
interface JsonStyle {
  /** `/` as `\/` (PHP). */
  slash: boolean;
  /** ASCII characters written as `\u00XX` (Go: `<>&`; Gson: `<>&='`; .NET: `<>&'+` and more). */
  escaped: string;
  /** Non-ASCII characters as `\uXXXX` (surrogate pairs for the astral ones). */
  nonAscii: boolean;
  upper: boolean;
}

const HTML = "<>&";
const STYLES: JsonStyle[] = [];
for (const upper of [false, true]) {
  for (const [slash, escaped, nonAscii] of [
    [false, "", false], // JSON.stringify, Jackson, serde, Ruby
    [true, "", true], // PHP json_encode
    [false, "", true], // Python json.dumps (ensure_ascii)
    [false, HTML, false], // Go encoding/json
    [false, `${HTML}='`, false], // Gson
    [false, `${HTML}'+\`"`, true], // .NET System.Text.Json
    [true, `${HTML}'+=\`"`, true], // everything at once
  ] as const) {
    STYLES.push({ slash, escaped, nonAscii, upper });
  }
}

const SHORT_ESCAPES: Record<string, string> = { '"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t" };

function jsonStyled(value: string, style: JsonStyle): string {
  const hex = (code: number) => {
    const h = code.toString(16).padStart(4, "0");
    return `\\u${style.upper ? h.toUpperCase() : h}`;
  };
  let out = "";
  for (let i = 0; i < value.length; i++) {
    const ch = value[i]!;
    const code = value.charCodeAt(i);
    if (style.escaped.includes(ch)) out += hex(code);
    else if (SHORT_ESCAPES[ch] !== undefined) out += SHORT_ESCAPES[ch];
    else if (code < 0x20) out += hex(code);
    else if (ch === "/" && style.slash) out += "\\/";
    else if (code > 0x7e && (style.nonAscii || code === 0x2028 || code === 0x2029)) out += hex(code);
    else out += ch;
  }
  return out;
}

/** The value inside a JSON string as the common encoders write it (one form per distinct spelling). */
export function jsonForms(value: string): string[] {
  return [...new Set(STYLES.map((s) => jsonStyled(value, s)))];
}

/** The percent-encoded spellings of a value: every byte but the unreserved ones, encodeURIComponent's, a form's. */
export function percentForms(value: string): string[] {
  return [...new Set([percentEncode(value), encodeURIComponent(value), formEncode(value)])];
}

const toUrlAlphabet = (b64: string) => b64.replace(/\+/g, "-").replace(/\//g, "_");

/**
 * The value in base64, standard and URL-safe. Whole (the value alone encoded: padded and unpadded), and for a
 * value inside longer encoded data at each of the three offsets a byte can have in a 3-byte group: the run of
 * characters that depends on the value's bytes alone. (The one or two characters at each end that mix in the
 * neighbours' bits are left out: they carry at most 4 bits of the value, and covering them would need every
 * possible neighbour.) A Basic-auth pair `user:value` is the second case.
 */
export function base64Forms(value: string): string[] {
  const bytes = Buffer.from(value, "utf8");
  const out = new Set<string>();
  const whole = bytes.toString("base64");
  for (const padded of [whole, toUrlAlphabet(whole)]) {
    out.add(padded);
    out.add(padded.replace(/=+$/, ""));
  }
  for (let k = 0; k < 3; k++) {
    const total = k + bytes.length;
    const encoded = Buffer.concat([Buffer.alloc(k), bytes]).toString("base64");
    // Characters made of the value's bits only: after the group mixing in the `k` bytes before it, up to the
    // last complete character of its final bytes.
    const core = encoded.slice(k === 0 ? 0 : k + 1, 4 * Math.floor(total / 3) + (total % 3));
    if (core.length === 0) continue;
    out.add(core);
    out.add(toUrlAlphabet(core));
  }
  return [...out];
}

/** The value's UTF-8 bytes in hex, lower and upper case. */
export function hexForms(value: string): string[] {
  const hex = Buffer.from(value, "utf8").toString("hex");
  return [...new Set([hex, hex.toUpperCase()])];
}

/** Forms shorter than this are not looked for in responses: too likely to occur by chance. */
export const ECHO_MIN_LENGTH = 8;
/** Values shorter than this are not watched by the leak guard. */
export const LEAK_MIN_LENGTH = 12;

/**
 * What the echo guard redacts for one injected value of at least 8 characters: the value, its base64 (standard
 * and URL-safe, padded or not, at any offset), hex, percent-encoded and JSON-string forms (each of 8 or more).
 */
export function echoForms(value: string): string[] {
  if (value.length < ECHO_MIN_LENGTH) return [];
  const all = [value, ...base64Forms(value), ...hexForms(value), ...percentForms(value), ...jsonForms(value)];
  return [...new Set(all)].filter((f) => f.length >= ECHO_MIN_LENGTH);
}

/**
 * What the leak guard looks for of one watched value (at least 12 characters): the value, its base64,
 * percent-encoded and JSON-string forms.
 */
export function leakForms(value: string): string[] {
  if (value.length < LEAK_MIN_LENGTH) return [];
  const all = [value, ...base64Forms(value), ...percentForms(value), ...jsonForms(value)];
  return [...new Set(all)].filter((f) => f.length >= ECHO_MIN_LENGTH);
}
