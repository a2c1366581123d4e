// Identifier and credential formats (docs/api.md#bodies-and-formats, docs/api.md#credentials). Pure: randomness comes from Web Crypto.

const LOWER = "abcdefghijklmnopqrstuvwxyz";

/** Entity ids are uuid v4. */
export function newId(): string {
  return crypto.randomUUID();
}

/** Organization and project ids: 16 random lowercase letters. */
export function newShortId(length = 16): string {
  const bytes = crypto.getRandomValues(new Uint8Array(length));
  let out = "";
  // 256 % 26 != 0, so reject the top of the byte range to keep the letters uniform.
  for (let i = 0; out.length < length; i++) {
    if (i >= bytes.length) return out + newShortId(length - out.length);
    const b = bytes[i]!;
    if (b < 234) out += LOWER[b % 26];
  }
  return out;
}

export function randomHex(bytes: number): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(bytes))).toString("hex");
}

export const TOKEN_PREFIX = {
  project: "svc_",
  organization: "svc_org_",
  partner: "svc_partner_",
  agent: "agt_",
} as const;

export type TokenKind = keyof typeof TOKEN_PREFIX;

export function newToken(kind: TokenKind): string {
  return TOKEN_PREFIX[kind] + randomHex(32);
}

/** Which kind of API key a bearer token claims to be, by prefix (most specific first). */
export function apiKeyKind(token: string): "partner" | "organization" | "project" | null {
  if (token.startsWith(TOKEN_PREFIX.partner)) return "partner";
  if (token.startsWith(TOKEN_PREFIX.organization)) return "organization";
  if (token.startsWith(TOKEN_PREFIX.project)) return "project";
  return null;
}

export function nowIso(): string {
  return new Date().toISOString();
}

let lastCreation = 0;

/**
 * A creation timestamp that never repeats within this process, so records created in the same millisecond
 * still list in creation order (by `createdAt`) on every database engine.
 */
export function creationTime(): string {
  lastCreation = Math.max(Date.now(), lastCreation + 1);
  return new Date(lastCreation).toISOString();
}
