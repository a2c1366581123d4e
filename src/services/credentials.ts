// Minting API keys and agent tokens: the caller gets the plaintext once; the store gets hash + sealed copy.
import { tokenHash } from "../crypto/hash.ts";
import type { Sealer } from "../crypto/seal.ts";
import { newToken, type TokenKind } from "../core/ids.ts";

export interface IssuedCredential {
  token: string;
  tokenHash: string;
  tokenSealed: string;
}

export function issueCredential(sealer: Sealer, kind: TokenKind, fixed?: string | null): IssuedCredential {
  const token = fixed ?? newToken(kind);
  return { token, tokenHash: tokenHash(token), tokenSealed: sealer.seal(token) };
}
