// PROVISIONAL: the seams of dbjudge with the design's signatures,
// so that the relay compiles before they land. Deleted when they are merged.
import type { AgentCredentials, AgentEntry, DatabaseCredential } from "../snapshot.ts";

export interface DbSession {
  agent: AgentEntry;
  credential: DatabaseCredential;
  host: string;
  database: string;
  credentials: AgentCredentials;
}
export type StatementVerdict = { ok: true; decision: string } | { ok: false; decision: string; code: string; message: string; approvalId?: string };
export class StatementJudge {
  judge(_session: DbSession, _statement: string, _signal: AbortSignal): StatementVerdict | Promise<StatementVerdict> {
    return { ok: true, decision: "allowed" };
  }
}
export function splitStatements(sql: string): string[] {
  return sql.split(";").map((s) => s.trim()).filter((s) => s.length > 0);
}
export function logStatement(
  _requestLogs: unknown,
  _session: DbSession,
  _row: { statement: string; decision: string; status: 200 | 400 | 403; latencyMs: number; approvalId?: string },
): void {}
