// What a reviewer sees of a held statement (docs/databases.md#writes-that-need-approval): the database, the credential and the
// statement — whole in the preview up to its cap, since a person approves exactly what runs. No credgate secret
// can be in it: the leak guard refused such a statement before any hold.
import type { ApprovalSummary } from "../../core/model.ts";
import type { DbSession } from "./dbSession.ts";

const DETAIL_CAP = 240;
const PREVIEW_CAP = 3000;

function cap(s: string, n: number): string {
  return s.length <= n ? s : `${s.slice(0, n - 1)}…`;
}

export function approvalSummaryOfStatement(session: DbSession, statement: string): ApprovalSummary {
  return {
    action: "SQL statement",
    details: [
      { label: "Database", value: cap(`${session.host}/${session.database}`, DETAIL_CAP) },
      { label: "Credential", value: cap(session.credential.name, DETAIL_CAP) },
      { label: "Statement", value: cap(statement, DETAIL_CAP) },
    ],
  };
}

export function approvalPreviewOfStatement(session: DbSession, statement: string): string {
  const summary = approvalSummaryOfStatement(session, statement);
  const lines = summary.details.map((d) => `${d.label}: ${d.label === "Statement" ? statement : d.value}`);
  return cap([summary.action, ...lines].join("\n"), PREVIEW_CAP);
}
