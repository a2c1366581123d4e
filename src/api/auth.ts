// Who is calling and in which context (docs/api.md#how-a-request-is-authenticated, docs/api.md#context, docs/api.md#roles): bearer key or session cookie → Principal, then
// the route's access (project, project-explicit, organization, partner) and role gate → RequestContext. Every failure is an ApiError.
import { ApiError, forbidden, unauthorized } from "../core/errors.ts";
import { apiKeyKind } from "../core/ids.ts";
import type { Role } from "../core/model.ts";
import type { ApiKeyRecord } from "../services/apiKeys.ts";
import type { Services } from "../services/index.ts";
import { SESSION_COOKIE } from "../services/sessions.ts";

export type RouteAccess = "project" | "project-explicit" | "organization" | "partner" | "session" | "none";
export type RoleGate = "any" | "admin" | "owner";

/**
 * Who is calling. A session made from an API key is that key (docs/api.md#accounts-and-sessions): it is the key's
 * principal, with the `sessionId` of the cookie that carried it; `session` is a person's session (password,
 * invite, claim) with all of their memberships.
 */
export type Principal =
  | { via: "project_key"; keyId: string; userId: string; organizationId: string; projectId: string; sessionId?: string }
  | { via: "org_key"; keyId: string; userId: string; organizationId: string; sessionId?: string }
  | { via: "partner_key"; keyId: string; partnerId: string }
  | { via: "session"; sessionId: string; userId: string };

/** The session cookie a principal came with, if it came with one (a person's session or a key's). */
export function sessionIdOf(principal: Principal): string | null {
  if (principal.via === "session") return principal.sessionId;
  if (principal.via === "partner_key") return null;
  return principal.sessionId ?? null;
}

/** The context of a project or organization route (`project`, `project-explicit`, `organization`). */
export interface RequestContext {
  principal: Principal;
  /** The acting user (every credential that reaches these routes has one). */
  userId: string;
  organizationId: string;
  /** The project of a project route (`project`, `project-explicit`); empty on organization routes. */
  projectId: string;
  role: Role;
}

/** The context of a partner route (`partner`). */
export interface PartnerContext {
  principal: Principal;
  /** The acting partner member; null for the partner key itself. */
  userId: string | null;
  /** The partner acted for. */
  partnerId: string;
  role: Role;
}

const RANK: Record<Role, number> = { member: 1, admin: 2, owner: 3 };

export function cookieValue(header: string | null, name: string): string | null {
  if (!header) return null;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq !== -1 && part.slice(0, eq).trim() === name) return decodeURIComponent(part.slice(eq + 1).trim());
  }
  return null;
}

/** Step 1–4 of docs/api.md#how-a-request-is-authenticated: the bearer header (no fallback to the cookie), else the session cookie, else 401. */
export async function authenticate(services: Services, headers: Headers): Promise<Principal> {
  const authorization = headers.get("authorization");
  if (authorization !== null) {
    const m = /^bearer\s+(.+)$/i.exec(authorization.trim());
    if (!m) throw unauthorized();
    return authenticateKey(services, m[1]!.trim());
  }
  const cookie = cookieValue(headers.get("cookie"), SESSION_COOKIE);
  if (cookie) {
    const session = await services.sessions.resolve(cookie);
    if (session && session.apiKeyHash === null) return { via: "session", sessionId: session.id, userId: session.userId };
    if (session) {
      // The key as it is now: regenerated, rotated or deleted, it no longer has this hash, and the session ends.
      const key = await services.apiKeys.findByHash(session.apiKeyHash!);
      const principal = key && (key.kind === "project" || key.kind === "organization") ? await keyPrincipal(services, key) : null;
      if (principal && principal.via !== "partner_key") return { ...principal, sessionId: session.id };
    }
  }
  throw unauthorized();
}

export async function authenticateKey(services: Services, token: string): Promise<Principal> {
  const kind = apiKeyKind(token);
  const key = kind ? await services.apiKeys.findByToken(token) : undefined;
  if (!key || key.kind !== kind) throw unauthorized();
  return keyPrincipal(services, key);
}

/** A stored key's principal, after its holder checks (step 4). */
async function keyPrincipal(services: Services, key: ApiKeyRecord): Promise<Principal> {
  const kind = key.kind;
  if (kind === "partner") {
    if (!key.partnerId) throw unauthorized();
    return { via: "partner_key", keyId: key.id, partnerId: key.partnerId };
  }
  if (!key.userId || !key.organizationId) throw unauthorized();
  const role = await services.orgs.keyHolderRole(key.organizationId, key.userId);
  if (kind === "project") {
    // Holder check: the project still exists (keys cascade with it) and its holder is an active member.
    if (!key.projectId || role === null) throw unauthorized();
    return { via: "project_key", keyId: key.id, userId: key.userId, organizationId: key.organizationId, projectId: key.projectId };
  }
  // Org keys act with the holder's current role; a demotion below admin kills the key.
  if (role === null || RANK[role] < RANK.admin) throw unauthorized();
  return { via: "org_key", keyId: key.id, userId: key.userId, organizationId: key.organizationId };
}

async function sessionOrganization(services: Services, userId: string, headers: Headers): Promise<{ organizationId: string; role: Role }> {
  const orgs = await services.orgs.membershipsOf(userId);
  const wanted = headers.get("x-organization-id")?.trim();
  if (wanted) {
    const m = orgs.find((o) => o.organizationId === wanted);
    if (!m) throw forbidden("Not a member of this organization");
    return { organizationId: m.organizationId, role: m.role };
  }
  const first = orgs[0];
  if (!first) throw unauthorized();
  return { organizationId: first.organizationId, role: first.role };
}

/**
 * A key's session names its context like a session does, but can name only the key's own: another organization
 * in X-Organization-Id → 403 (as for a non-member), another project in X-Project-Id → 401. A key presented in
 * `Authorization` ignores both headers, as it always has.
 */
function keySessionHeaders(principal: { organizationId: string; sessionId?: string }, headers: Headers, projectId: string | null): void {
  if (principal.sessionId === undefined) return;
  const org = headers.get("x-organization-id")?.trim();
  if (org && org !== principal.organizationId) throw forbidden("Not a member of this organization");
  const project = headers.get("x-project-id")?.trim();
  if (projectId !== null && project && project !== projectId) throw unauthorized();
}

async function projectContext(services: Services, principal: Principal, headers: Headers, star: boolean): Promise<{ organizationId: string; projectId: string; role: Role }> {
  const header = headers.get("x-project-id")?.trim() || null;
  switch (principal.via) {
    case "project_key":
      keySessionHeaders(principal, headers, principal.projectId);
      return { organizationId: principal.organizationId, projectId: principal.projectId, role: (await services.orgs.keyHolderRole(principal.organizationId, principal.userId))! };
    case "org_key": {
      keySessionHeaders(principal, headers, null);
      if (!header && principal.sessionId !== undefined) {
        // Like a person's session, an org key's session without the header works in the organization's first project.
        const first = await services.orgs.firstProject(principal.organizationId);
        if (!first) throw unauthorized();
        return { organizationId: principal.organizationId, projectId: first.id, role: (await services.orgs.keyHolderRole(principal.organizationId, principal.userId))! };
      }
      if (!header) throw star ? ApiError.envelope(400, "X-Project-Id header is required") : unauthorized();
      const project = await services.orgs.getProject(header);
      if (!project || project.organizationId !== principal.organizationId) throw unauthorized();
      return { organizationId: project.organizationId, projectId: project.id, role: (await services.orgs.keyHolderRole(principal.organizationId, principal.userId))! };
    }
    case "session": {
      if (header) {
        const project = await services.orgs.getProject(header);
        const role = project ? await services.orgs.activeRole(project.organizationId, principal.userId) : null;
        if (!project || role === null) throw unauthorized();
        return { organizationId: project.organizationId, projectId: project.id, role };
      }
      const { organizationId, role } = await sessionOrganization(services, principal.userId, headers);
      const project = await services.orgs.firstProject(organizationId);
      if (!project) throw unauthorized();
      return { organizationId, projectId: project.id, role };
    }
    case "partner_key":
      throw unauthorized();
  }
}

async function organizationContext(services: Services, principal: Principal, headers: Headers): Promise<{ organizationId: string; role: Role }> {
  switch (principal.via) {
    case "project_key":
    case "org_key":
      keySessionHeaders(principal, headers, null);
      return { organizationId: principal.organizationId, role: (await services.orgs.keyHolderRole(principal.organizationId, principal.userId))! };
    case "session":
      return sessionOrganization(services, principal.userId, headers);
    case "partner_key":
      throw unauthorized();
  }
}

/** Resolves the route's context and enforces its role gate. */
export async function resolveContext(services: Services, principal: Principal, headers: Headers, access: "project" | "project-explicit" | "organization", gate: RoleGate): Promise<RequestContext> {
  if (principal.via === "partner_key") throw unauthorized();
  const c = access === "organization" ? { ...(await organizationContext(services, principal, headers)), projectId: "" } : await projectContext(services, principal, headers, access === "project-explicit");
  if (gate !== "any" && RANK[c.role] < RANK[gate]) throw forbidden();
  return { principal, userId: principal.userId, ...c };
}

/** `partner` (docs/api.md#context): a partner key acts as the partner's owner; a partner member's session with their role. */
export async function resolvePartnerContext(services: Services, principal: Principal, gate: RoleGate): Promise<PartnerContext> {
  let c: { partnerId: string; role: Role; userId: string | null };
  if (principal.via === "partner_key") c = { partnerId: principal.partnerId, role: "owner", userId: null };
  else if (principal.via === "session") {
    const member = await services.partners.membershipOf(principal.userId);
    if (!member) throw forbidden();
    c = { partnerId: member.id, role: member.role, userId: principal.userId };
  } else throw unauthorized();
  if (gate !== "any" && RANK[c.role] < RANK[gate]) throw forbidden();
  return { principal, userId: c.userId, partnerId: c.partnerId, role: c.role };
}
