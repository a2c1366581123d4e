// Partners, organizations, projects and people, and how they sign in: memberships, API keys, sessions,
// partner members, claim links, invites, failed logins.
// Part of the one table declaration (index.ts).
import { boolean, index, table, text, uniqueIndex } from "./define.ts";

export const partners = table("partners", {
  id: text("id").primaryKey(),
  name: text("name").notNull(),
  createdAt: text("created_at").notNull(),
});

export const organizations = table("organizations", {
  id: text("id").primaryKey(),
  name: text("name").notNull(),
  slug: text("slug").notNull(),
  partnerId: text("partner_id").references("partners.id", "set null"),
  claimed: boolean("claimed").notNull().default(true),
  partnerDetached: boolean("partner_detached").notNull().default(false),
  /** When a partner organization was claimed, and by whom (docs/api.md#partners). */
  claimedAt: text("claimed_at"),
  claimedByUserId: text("claimed_by_user_id").references("users.id", "set null"),
  createdAt: text("created_at").notNull(),
});

export const projects = table(
  "projects",
  {
    id: text("id").primaryKey(),
    organizationId: text("organization_id").notNull().references("organizations.id", "cascade"),
    name: text("name").notNull(),
    slug: text("slug").notNull(),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  { indexes: [uniqueIndex("projects_org_slug", ["organizationId", "slug"])] },
);

export const users = table("users", {
  id: text("id").primaryKey(),
  email: text("email").notNull().unique(),
  name: text("name"),
  passwordHash: text("password_hash"),
  createdAt: text("created_at").notNull(),
});

export const memberships = table(
  "memberships",
  {
    organizationId: text("organization_id").notNull().references("organizations.id", "cascade"),
    userId: text("user_id").notNull().references("users.id", "cascade"),
    role: text("role").type("Role").notNull(),
    status: text("status").type("MembershipStatus").notNull().default("active"),
    createdAt: text("created_at").notNull(),
  },
  { primaryKey: ["organizationId", "userId"], indexes: [index("memberships_user", ["userId"])] },
);

export const apiKeys = table(
  "api_keys",
  {
    id: text("id").primaryKey(),
    kind: text("kind").type("ApiKeyKind").notNull(),
    tokenHash: text("token_hash").notNull().unique(),
    tokenSealed: text("token_sealed").notNull(),
    userId: text("user_id").references("users.id", "cascade"),
    organizationId: text("organization_id").references("organizations.id", "cascade"),
    projectId: text("project_id").references("projects.id", "cascade"),
    partnerId: text("partner_id").references("partners.id", "cascade"),
    createdAt: text("created_at").notNull(),
  },
  {
    indexes: [
      uniqueIndex("api_keys_project_holder", ["userId", "projectId"], "kind = 'project'"),
      uniqueIndex("api_keys_org_holder", ["userId", "organizationId"], "kind = 'organization'"),
    ],
  },
);

export const sessions = table("sessions", {
  id: text("id").primaryKey(),
  tokenHash: text("token_hash").notNull().unique(),
  userId: text("user_id").notNull().references("users.id", "cascade"),
  createdAt: text("created_at").notNull(),
  expiresAt: text("expires_at").notNull(),
  revokedAt: text("revoked_at"),
  /** A session made from an API key (docs/api.md#accounts-and-sessions): that key's hash at sign-in; null for a person's session. */
  apiKeyHash: text("api_key_hash"),
});

/** Partner members (docs/api.md#partners): the people of a partner's portal; a user belongs to at most one partner. */
export const partnerMembers = table(
  "partner_members",
  {
    partnerId: text("partner_id").notNull().references("partners.id", "cascade"),
    userId: text("user_id").notNull().references("users.id", "cascade"),
    role: text("role").type("Role").notNull(),
    createdAt: text("created_at").notNull(),
  },
  { primaryKey: ["partnerId", "userId"], indexes: [uniqueIndex("partner_members_user", ["userId"])] },
);

/**
 * Claim links (docs/api.md#states, docs/api.md#projects-and-team, docs/api.md#partners): a partner organization's (one at a time, no expiry) or a team
 * provision's (expires after 7 days). `userId` is the placeholder the claimant replaces. The token is kept as
 * a lookup hash and a sealed copy: the gateway's `claim_required` answer shows the current link.
 */
export const claimLinks = table(
  "claim_links",
  {
    id: text("id").primaryKey(),
    kind: text("kind").type("ClaimKind").notNull(),
    tokenHash: text("token_hash").notNull().unique(),
    tokenSealed: text("token_sealed").notNull(),
    organizationId: text("organization_id").notNull().references("organizations.id", "cascade"),
    /** The provision's project (null for organizations, or once that project is gone). */
    projectId: text("project_id").references("projects.id", "set null"),
    userId: text("user_id").notNull().references("users.id", "cascade"),
    expiresAt: text("expires_at"),
    createdAt: text("created_at").notNull(),
  },
  {
    indexes: [
      uniqueIndex("claim_links_org", ["organizationId"], "kind = 'organization'"),
      index("claim_links_user", ["userId"]),
    ],
  },
);

/**
 * Invites (docs/api.md#accounts-and-sessions accept-invite): set a password for an invited user (a partner member), or, with no
 * user yet, create the partner owner's account (`credgate partner create` without an owner email).
 */
export const invites = table(
  "invites",
  {
    id: text("id").primaryKey(),
    tokenHash: text("token_hash").notNull().unique(),
    userId: text("user_id").references("users.id", "cascade"),
    partnerId: text("partner_id").references("partners.id", "cascade"),
    expiresAt: text("expires_at").notNull(),
    createdAt: text("created_at").notNull(),
  },
  { indexes: [index("invites_user", ["userId"])] },
);

/**
 * Failed logins (docs/api.md#accounts-and-sessions throttling): one row per failure of a subject (the hash of an email or a key),
 * in the store so that every instance counts the same failures. Rows older than the window are deleted.
 */
export const loginFailures = table(
  "login_failures",
  {
    id: text("id").primaryKey(),
    subject: text("subject").notNull(),
    failedAt: text("failed_at").notNull(),
  },
  { indexes: [index("login_failures_subject", ["subject", "failedAt"])] },
);
