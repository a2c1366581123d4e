// SASLprep (RFC 4013) of a password, as PostgreSQL's own pg_saslprep (server and libpq alike) does it for SCRAM: an
// ASCII password is used as it is; any other is mapped (non-ASCII spaces to a space, "commonly mapped to nothing"
// characters removed), NFKC-normalised and checked, and a password with a prohibited character or broken bidirectional
// text is used as it is, unprepared, exactly like the server did when the password was set. Unassigned code points are
// judged against today's Unicode, not 3.2's: a password mixing a character newer than Unicode 3.2 with one that NFKC
// changes is the one case that may differ.

/** RFC 3454 C.1.2, mapped to U+0020. */
const NON_ASCII_SPACE = /[\u00A0\u1680\u2000-\u200B\u202F\u205F\u3000]/gu;
/** RFC 3454 B.1, removed. */
const MAPPED_TO_NOTHING = /[\u00AD\u034F\u1806\u180B-\u180D\u200B-\u200D\u2060\uFE00-\uFE0F\uFEFF]/gu;
/** RFC 3454 C.2.1 – C.9 (C.1.2 is mapped away above). */
const PROHIBITED = new RegExp(
  [
    "[\\u0000-\\u001F\\u007F-\\u009F]", // C.2.1, C.2.2 controls
    "[\\u0340\\u0341\\u06DD\\u070F\\u180E\\u200C-\\u200F\\u2028-\\u202E\\u2060-\\u2063\\u206A-\\u206F\\uFEFF]", // C.2.2, C.8
    "[\\u{1D173}-\\u{1D17A}]", // C.2.2 musical format controls
    "[\\uE000-\\uF8FF\\u{F0000}-\\u{FFFFD}\\u{100000}-\\u{10FFFD}]", // C.3 private use
    "[\\uFDD0-\\uFDEF\\uFFF9-\\uFFFF]", // C.4 non-characters, C.6 inappropriate for plain text
    "[\\u{1FFFE}\\u{1FFFF}\\u{2FFFE}\\u{2FFFF}\\u{3FFFE}\\u{3FFFF}\\u{4FFFE}\\u{4FFFF}\\u{5FFFE}\\u{5FFFF}\\u{6FFFE}\\u{6FFFF}\\u{7FFFE}\\u{7FFFF}\\u{8FFFE}\\u{8FFFF}\\u{9FFFE}\\u{9FFFF}\\u{AFFFE}\\u{AFFFF}\\u{BFFFE}\\u{BFFFF}\\u{CFFFE}\\u{CFFFF}\\u{DFFFE}\\u{DFFFF}\\u{EFFFE}\\u{EFFFF}\\u{FFFFE}\\u{FFFFF}\\u{10FFFE}\\u{10FFFF}]", // C.4
    "[\\uD800-\\uDFFF]", // C.5 lone surrogates
    "[\\u2FF0-\\u2FFB]", // C.7
    "[\\u{E0001}\\u{E0020}-\\u{E007F}]", // C.9 tags
    "\\p{Cn}", // A.1 unassigned (today's Unicode)
  ].join("|"),
  "u",
);
/** RandALCat (RFC 3454 D.1): right-to-left characters. */
const RAND_AL = /[\u0590-\u08FF\uFB1D-\uFDFF\uFE70-\uFEFE\u{10800}-\u{10FFF}\u{1E800}-\u{1EFFF}]/u;
/** LCat (RFC 3454 D.2), approximated as the letters and marks of left-to-right scripts. */
const L_CAT = /[\p{L}\p{Mc}]/u;

/** The password as SCRAM hashes it (PostgreSQL's rules: unprepared when preparation is not possible). */
export function saslprep(password: string): string {
  // The server's fast path: ASCII (control characters included) is not prepared at all.
  if (/^[\x00-\x7F]*$/.test(password)) return password;
  const prepared = password.replace(NON_ASCII_SPACE, " ").replace(MAPPED_TO_NOTHING, "").normalize("NFKC");
  if (PROHIBITED.test(prepared)) return password;
  const chars = [...prepared];
  if (chars.some((c) => RAND_AL.test(c))) {
    const lToR = chars.some((c) => !RAND_AL.test(c) && L_CAT.test(c));
    if (lToR || !RAND_AL.test(chars[0]!) || !RAND_AL.test(chars[chars.length - 1]!)) return password;
  }
  return prepared;
}
