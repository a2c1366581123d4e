// Random SQL for the statement reader's property tests (docs/databases.md#statements-reads-and-writes): valid
// literals, quoted identifiers, dollar quotes and comments whose insides are full of what would end a statement
// or open another literal (`;`, quotes, `$$`, `--`, `/*`, `DELETE FROM t`), and SELECT statements built of them
// that PostgreSQL accepts. Used by the pure property test and by the one that asks a real server.
import fc from "fast-check";

/** Characters that would end or open something if they were read outside their literal. */
const TRICKY = ["a", "Z", " ", ";", "'", '"', "$", "$$", "--", "/*", "*/", "\n", "E'", "U&'", "DELETE FROM t", "SET transaction_read_only = off", "\\", "é", "\t"];

const inside = (exclude: string[] = []) =>
  fc.array(fc.constantFrom(...TRICKY.filter((t) => !exclude.some((x) => t.includes(x)))), { maxLength: 8 }).map((parts) => parts.join(""));

/** A literal or comment PostgreSQL reads as one piece, whatever it holds; `expr` tells whether it is a value. */
export interface Fragment {
  text: string;
  expr: boolean;
}

export function fragments(options: { backslashes: boolean }): fc.Arbitrary<Fragment> {
  const noBackslash = options.backslashes ? [] : ["\\"];
  return fc.oneof(
    // '…' with '' for a quote.
    inside(noBackslash).map((s) => ({ text: `'${s.replace(/'/g, "''")}'`, expr: true })),
    // E'…' with backslash escapes.
    inside().map((s) => ({ text: `E'${s.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`, expr: true })),
    // U&'…' (no backslash: that is its escape character).
    inside(["\\"]).map((s) => ({ text: `U&'${s.replace(/'/g, "''")}'`, expr: true })),
    // B'…' holds only bits.
    fc.array(fc.constantFrom("0", "1"), { maxLength: 6 }).map((b) => ({ text: `B'${b.join("")}'`, expr: true })),
    // $tag$…$tag$, never holding its own tag.
    fc.tuple(fc.constantFrom("", "a", "tag", "_x1"), inside()).map(([tag, s]) => {
      const delim = `$${tag}$`;
      // The first delimiter after the opening one must be the closing one.
      let body = s.split(delim).join("");
      while (`${body}${delim}`.indexOf(delim) !== body.length) body = body.slice(0, -1);
      return { text: `${delim}${body}${delim}`, expr: true };
    }),
    // A string continued over a newline.
    fc.tuple(inside(noBackslash), inside(noBackslash)).map(([a, b]) => ({ text: `'${a.replace(/'/g, "''")}'\n  '${b.replace(/'/g, "''")}'`, expr: true })),
    // -- to the end of the line.
    inside(["\n"]).map((s) => ({ text: `-- ${s}\n`, expr: false })),
    // /* … */, possibly nested once.
    fc.tuple(inside(["/*", "*/"]), fc.boolean()).map(([s, nested]) => ({ text: nested ? `/* ${s} /* ${s} */ ${s} */` : `/* ${s} */`, expr: false })),
  );
}

/** An alias: a "quoted identifier", or a plain one with `$` in it (which opens no dollar quote). */
export const quotedAlias = fc.oneof(
  inside().map((s) => `"${(s || "x").replace(/"/g, '""')}"`),
  fc.constantFrom("a$$", "b$x$", "c$1"),
);

/** One SELECT of fragments (and aliases) that a server runs, returning one row. */
export function selects(options: { backslashes: boolean }): fc.Arbitrary<string> {
  const comment = fragments(options).filter((f) => !f.expr);
  const parts = fc.array(fc.tuple(fragments(options), fc.option(quotedAlias, { nil: null })), { minLength: 1, maxLength: 4 });
  return fc.tuple(fc.option(comment, { nil: null }), parts).map(([first, parts]) => {
    const lead = first ? `${first.text} ` : "";
    const columns: string[] = [];
    let pending = "";
    for (const [f, alias] of parts) {
      if (!f.expr) {
        pending += ` ${f.text}`;
        continue;
      }
      // A `$` right after a dollar quote's delimiter is fine; a value right after a comment needs no comma.
      columns.push(`${pending} ${f.text}${alias ? ` AS ${alias}` : ""}`);
      pending = "";
    }
    if (columns.length === 0) columns.push(`${pending} 1`);
    else if (pending) columns[columns.length - 1] += pending;
    return `${lead}SELECT ${columns.join(",")}`;
  });
}

/** What goes between two statements: a semicolon, with whitespace and empty statements around it. */
export const separators = fc.constantFrom(";", " ; ", ";\n", ";\t\r\n", ";;", " ;  ; ", "; -- only a comment ;\n;");
