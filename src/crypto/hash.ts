// Lookup hashes for API keys, agent tokens and session ids: the database stores these, never the token.
import { createHash } from "node:crypto";

export function tokenHash(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}
