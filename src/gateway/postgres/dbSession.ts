// What the database broker knows of one agent connection while it judges and logs its statements
// (docs/databases.md#statements-reads-and-writes): who, through which credential, to which host and database.
import type { AgentCredentials, AgentEntry, DatabaseCredential } from "../snapshot.ts";

/** One agent connection on the database listener, as the judge and the log see it. */
export interface DbSession {
  agent: AgentEntry;
  credential: DatabaseCredential;
  /** The host as logged and shown to reviewers: without `:5432`, with any other port. */
  host: string;
  database: string;
  credentials: AgentCredentials;
}

/** A policy rule that decided, for the log row (matchedRuleLogicalId, matchedRuleName). */
export interface MatchedRule {
  logicalId: string;
  name: string;
}
