// Users, sessions, organizations, projects and team members (docs/api.md#accounts-and-sessions, docs/api.md#projects-and-team).
import { Type as T, type Static } from "@sinclair/typebox";
import { Enum, Nullable, Role, Timestamp, Uuid } from "./common.ts";

export const User = T.Object({ id: Uuid, email: T.String(), name: Nullable(T.String()), createdAt: Timestamp }, { $id: "User" });
export type User = Static<typeof User>;
export const UserUpdated = T.Object({ id: Uuid, email: T.String(), name: Nullable(T.String()) }, { $id: "UserUpdated" });
export const ApiKey = T.Object({ apiKey: T.String() }, { $id: "ApiKey" });

export const Session = T.Object(
  {
    user: User,
    organizations: T.Array(T.Object({ id: T.String(), name: T.String(), role: Role })),
    projects: T.Array(T.Object({ id: T.String(), name: T.String(), organizationId: T.String() })),
    partner: Nullable(T.Object({ id: T.String(), name: T.String(), role: Role })),
    /**
     * What the session reaches (docs/api.md#accounts-and-sessions): `account` — the person, with every membership
     * (password, invite, claim); `project` or `organization` — the API key it was made from, and only that.
     */
    scope: T.Object({ kind: Enum("account", "organization", "project"), organizationId: Nullable(T.String()), projectId: Nullable(T.String()) }),
  },
  { $id: "Session" },
);
export type Session = Static<typeof Session>;
export const Login = T.Object({ user: User }, { $id: "Login" });
export const Signup = T.Object({ user: User, organizationId: T.String(), projectId: T.String() }, { $id: "Signup" });
export const Claimed = T.Object({ kind: Enum("organization", "provision"), organizationId: T.String(), projectId: T.String() }, { $id: "Claimed" });
export type Claimed = Static<typeof Claimed>;

export const Organization = T.Object(
  {
    id: T.String({ pattern: "^[a-z]{16}$" }),
    name: T.String(),
    slug: T.String(),
    partnerManaged: T.Boolean(),
    partnerDetached: T.Boolean(),
    claimed: T.Boolean(),
    createdAt: Timestamp,
  },
  { $id: "Organization" },
);
export type Organization = Static<typeof Organization>;

export const Project = T.Object(
  { id: T.String(), name: T.String(), slug: T.String(), organizationId: T.String(), createdAt: Timestamp, updatedAt: Timestamp },
  { $id: "Project" },
);
export type Project = Static<typeof Project>;
export const ProjectCreated = T.Object({ ...Project.properties, apiKey: T.String() }, { $id: "ProjectCreated" });
export type ProjectCreated = Static<typeof ProjectCreated>;

export const TeamMember = T.Object(
  { userId: Uuid, email: T.String(), name: Nullable(T.String()), role: Role, status: Enum("active", "pending"), joinedAt: Timestamp },
  { $id: "TeamMember" },
);
export type TeamMember = Static<typeof TeamMember>;

export const Provision = T.Object(
  { id: Uuid, userId: Uuid, projectId: T.String(), apiKey: T.String(), claimUrl: T.String(), expiresAt: Timestamp },
  { $id: "Provision" },
);
export type Provision = Static<typeof Provision>;

export const Health = T.Object({ status: T.Literal("ok"), version: T.String(), timestamp: Timestamp }, { $id: "Health" });
export const Counts = T.Object({ agents: T.Integer(), apps: T.Integer(), llms: T.Integer(), secrets: T.Integer() }, { $id: "Counts" });
export type Counts = Static<typeof Counts>;
