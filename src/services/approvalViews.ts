// How an approval row is shown (docs/policy.md#reviewing-approvals): the held request a reviewer sees, and the
// record with its outcome.
import type { ApprovalRecord, ApprovalRequest } from "../core/records/approvals.ts";
import type { ApprovalRow } from "../store/rows.ts";

export function approvalRequestView(row: ApprovalRow): ApprovalRequest {
  return {
    id: row.id,
    projectId: row.projectId,
    method: row.method,
    url: row.url,
    host: row.host,
    path: row.path,
    headers: row.headers,
    bodyPreview: row.bodyPreview,
    summary: row.summary,
    agent: { id: row.agentId, name: row.agentName, externalId: row.agentIdentifier },
    createdAt: row.createdAt,
    expiresAt: row.expiresAt,
  };
}

export function approvalRecordView(row: ApprovalRow): ApprovalRecord {
  return {
    ...approvalRequestView(row),
    status: row.status,
    decidedAt: row.decidedAt,
    decidedBy: row.decidedByEmail ? { userId: row.decidedByUserId, email: row.decidedByEmail } : null,
  };
}
