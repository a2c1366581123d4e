// Partner organizations, members, claim links and an organization's partner status (docs/api.md#partners).
import { Type as T, type Static } from "@sinclair/typebox";
import { Project } from "./accounts.ts";
import { Enum, Nullable, Role, Timestamp, Uuid } from "./common.ts";

export const PartnerOrganization = T.Object(
  {
    id: T.String(),
    name: T.String(),
    slug: T.String(),
    status: Enum("unclaimed", "claimed", "detached"),
    claimedByEmail: Nullable(T.String()),
    claimedAt: Nullable(Timestamp),
    createdAt: Timestamp,
    projects: T.Array(Project),
  },
  { $id: "PartnerOrganization" },
);
export type PartnerOrganization = Static<typeof PartnerOrganization>;

export const PartnerOrgCreated = T.Object(
  {
    organizationId: T.String(),
    projectId: T.String(),
    agentId: Uuid,
    orgApiKey: T.String(),
    projectApiKey: T.String(),
    agentToken: T.String(),
    claimUrl: T.String(),
  },
  { $id: "PartnerOrgCreated" },
);
export type PartnerOrgCreated = Static<typeof PartnerOrgCreated>;

export const OrgPartnerStatus = T.Object({ partnerManaged: T.Boolean(), detached: T.Boolean(), partnerName: Nullable(T.String()) }, { $id: "OrgPartnerStatus" });
export type OrgPartnerStatus = Static<typeof OrgPartnerStatus>;

export const PartnerMember = T.Object({ userId: Uuid, email: T.String(), role: Role, createdAt: Timestamp }, { $id: "PartnerMember" });
export type PartnerMember = Static<typeof PartnerMember>;
export const PartnerMemberAdded = T.Object({ ...PartnerMember.properties, inviteUrl: Nullable(T.String()) }, { $id: "PartnerMemberAdded" });
export type PartnerMemberAdded = Static<typeof PartnerMemberAdded>;

export const ClaimLink = T.Object({ claimUrl: T.String() }, { $id: "ClaimLink" });
export const RotatedTokens = T.Object({ orgApiKey: T.String(), projectApiKey: T.String(), agentToken: T.String() }, { $id: "RotatedTokens" });
export type RotatedTokens = Static<typeof RotatedTokens>;
