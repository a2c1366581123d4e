// Canonical JSON (docs/operations.md#audit-log): the one text of a value that the audit chain hashes. Object keys
// sorted by UTF-16 code units (JavaScript's default sort; byte order for ASCII keys), no whitespace, strings and
// numbers as JSON.stringify writes them, `undefined` members left out (as JSON.stringify does). Pure.

export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") {
    const text = JSON.stringify(value);
    if (text === undefined) throw new TypeError(`canonicalJson: ${typeof value} has no JSON form`);
    return text;
  }
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? "null" : canonicalJson(v))).join(",")}]`;
  const members: string[] = [];
  for (const key of Object.keys(value).sort()) {
    const v = (value as Record<string, unknown>)[key];
    if (v !== undefined) members.push(`${JSON.stringify(key)}:${canonicalJson(v)}`);
  }
  return `{${members.join(",")}}`;
}
