// Webhook signatures (docs/policy.md#notifications): `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">`,
// keyed with the channel's signing secret (the whole `whsec_…` string as UTF-8). The timestamp is signed too,
// so a receiver can refuse replays older than it tolerates.
import { createHmac } from "node:crypto";
import { randomHex } from "../core/ids.ts";

export const SIGNING_SECRET_PREFIX = "whsec_";

/** A new signing secret: `whsec_` + 64 hex (256 bits). */
export function newSigningSecret(): string {
  return SIGNING_SECRET_PREFIX + randomHex(32);
}

export function webhookSignature(secret: string, body: string, unixSeconds: number): string {
  const mac = createHmac("sha256", secret).update(`${unixSeconds}.${body}`).digest("hex");
  return `t=${unixSeconds},v1=${mac}`;
}
