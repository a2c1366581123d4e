// What an audit event says changed (docs/operations.md#audit-log): `{field: [before, after]}` for the fields that
// differ between two states of a record, `before` null on a create and `after` null on a delete. Secret values,
// tokens, keys, passwords and signing secrets never appear: such fields (at any depth) read "<redacted>", and so
// does any string shaped like one of credgate's own credentials. Bookkeeping fields are left out. Pure.

export const REDACTED = "<redacted>";

/** Field names whose values are credentials, or sealed or hashed forms of one (`apiKey`, `masterKey`, `private_key`, …). */
const SECRET_FIELD = /(^value$|sealed|secret|token|password|passphrase|signing|credential|hash$|key$)/i;
/** credgate's own credential formats (agent tokens, API keys) and session ids, wherever they turn up. */
const CREDENTIAL_TEXT = /\b(agt|svc)_[A-Za-z0-9_]{16,}/;
/** Not changes anyone asked for: timestamps of the write itself and the target's own id (the event names it). */
const BOOKKEEPING = new Set(["id", "createdAt", "updatedAt", "lastSeenAt"]);

export type Changes = Record<string, [unknown, unknown]>;

/** Identifiers of records (`secretId`, `secretIds`) name a secret without being one. */
const IDENTIFIER = /Ids?$/;

export function isSecretField(name: string): boolean {
  return SECRET_FIELD.test(name) && !IDENTIFIER.test(name);
}

/** `value` with every secret field and credential-shaped string replaced by "<redacted>". */
export function redactValue(value: unknown): unknown {
  if (typeof value === "string") return CREDENTIAL_TEXT.test(value) ? REDACTED : value;
  if (Array.isArray(value)) return value.map(redactValue);
  if (value && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = isSecretField(k) && v !== null && v !== undefined ? REDACTED : redactValue(v);
    return out;
  }
  return value;
}

/** Plain JSON data: Dates as ISO text, undefined as absent (what a stored record reads back as). */
function plain(value: unknown): unknown {
  return value === undefined ? undefined : JSON.parse(JSON.stringify(value));
}

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * The changed fields between `before` and `after` (either may be null), redacted. A secret field that changed
 * reads `["<redacted>", "<redacted>"]` (or null on the side where it was unset): that it changed is kept.
 */
export function diffChanges(before: object | null, after: object | null): Changes {
  const b = (plain(before) ?? null) as Record<string, unknown> | null;
  const a = (plain(after) ?? null) as Record<string, unknown> | null;
  const fields = new Set([...Object.keys(b ?? {}), ...Object.keys(a ?? {})]);
  const out: Changes = {};
  for (const field of [...fields].sort()) {
    if (BOOKKEEPING.has(field)) continue;
    const was = b === null ? null : (b[field] ?? null);
    const now = a === null ? null : (a[field] ?? null);
    if (b !== null && a !== null && same(was, now)) continue;
    if (b === null && now === null) continue;
    if (a === null && was === null) continue;
    if (isSecretField(field)) out[field] = [was === null ? null : REDACTED, now === null ? null : REDACTED];
    else out[field] = [redactValue(was), redactValue(now)];
  }
  return out;
}
