// The one table declaration (docs/architecture.md#storage): every table of both engines, declared once in
// dialect-neutral terms (define.ts), one file per area. `npm run db:schema` (scripts/gen-schema.ts) writes the
// drizzle tables of each engine from it (src/store/schema.sqlite.ts, src/store/schema.pg.ts), and
// `npm run db:generate` then each engine's migrations from those.
// Timestamps are ISO 8601 strings; secrets, key copies and tokens are sealed (crypto/seal.ts); keys and
// tokens are found by their SHA-256 hash and never stored in plaintext.
import * as accounts from "./accounts.ts";
import * as agents from "./agents.ts";
import * as approvals from "./approvals.ts";
import * as budgets from "./budgets.ts";
import * as logs from "./logs.ts";
import * as mcp from "./mcp.ts";
import * as notifications from "./notifications.ts";
import * as policy from "./policy.ts";
import * as secrets from "./secrets.ts";
import * as system from "./system.ts";

/** The areas, in the order the generated files list them; each area's tables by exported name. */
export const areas = { accounts, agents, secrets, policy, approvals, budgets, logs, notifications, mcp, system };
