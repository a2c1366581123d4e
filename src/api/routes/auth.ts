// Sessions for the dashboard (docs/api.md#accounts-and-sessions): login with an API key (both modes) or, on cloud, with an
// email and password; logout; the current session. A password (or an invite, or a claim) signs the person in with
// all of their memberships; an API key signs in the key: its one project or organization, for 12 hours at most.
import { Type as T } from "@sinclair/typebox";
import { ApiError, AUTH_FAILED, forbidden, unauthorized } from "../../core/errors.ts";
import type { Services } from "../../services/index.ts";
import { LoginThrottle } from "../../services/loginThrottle.ts";
import { KEY_SESSION_LIFETIME_MS, SESSION_COOKIE, SESSION_LIFETIME_MS } from "../../services/sessions.ts";
import { isPlaceholderEmail } from "../../services/organizations.ts";
import { authenticateKey, sessionIdOf, type Principal } from "../auth.ts";
import type { User } from "../../core/records/accounts.ts";
import { created, noContent, ok, route, type RouteDef } from "../route.ts";
import * as R from "../../core/records/index.ts";
import { returns, returnsCreated, returnsNothing } from "../responses.ts";

export const LoginBody = T.Object({
  apiKey: T.Optional(T.String({ trim: true })),
  email: T.Optional(T.String({ trim: true, maxLength: 255 })),
  password: T.Optional(T.String({ maxLength: 256 })),
});

export const SignupBody = T.Object({
  email: T.String({ trim: true, maxLength: 255, format: "email" }),
  password: T.String({ minLength: 8, maxLength: 256, error: "password must be 8-256 characters" }),
  name: T.Optional(T.String({ trim: true, minLength: 1, maxLength: 255 })),
});
export const AcceptInviteBody = T.Object({
  token: T.String({ trim: true, minLength: 1 }),
  password: T.String({ minLength: 8, maxLength: 256, error: "password must be 8-256 characters" }),
});
export const ClaimBody = T.Object({ token: T.String({ trim: true, minLength: 1 }) });

const TOO_MANY = (): ApiError => ApiError.envelope(429, "Too many attempts, try again later");

function sessionCookie(services: Services, value: string, maxAgeSeconds: number): string {
  const secure = services.deps.config.publicUrl.startsWith("https:") ? "; Secure" : "";
  return `${SESSION_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${maxAgeSeconds}${secure}`;
}

async function userView(services: Services, userId: string): Promise<User> {
  const u = await services.orgs.getUser(userId);
  if (!u) throw unauthorized();
  return { id: u.id, email: u.email, name: u.name, createdAt: u.createdAt };
}

/** A new session for the user (or for `apiKey`, held by the user): its cookie, to go with the answer. */
async function sessionHeaders(services: Services, userId: string, apiKey: string | null = null): Promise<Record<string, string>> {
  const { token } = await services.sessions.create(userId, apiKey);
  return { "set-cookie": sessionCookie(services, token, (apiKey === null ? SESSION_LIFETIME_MS : KEY_SESSION_LIFETIME_MS) / 1000) };
}

async function startSession(services: Services, userId: string, apiKey: string | null = null) {
  const headers = await sessionHeaders(services, userId, apiKey);
  return ok({ user: await userView(services, userId) }, headers);
}

async function passwordUser(services: Services, email: string, password: string): Promise<string | null> {
  const user = await services.orgs.getUserByEmail(email);
  // A claim placeholder never signs in (it has no password to begin with).
  if (!user?.passwordHash || isPlaceholderEmail(user.email)) return null;
  return (await Bun.password.verify(password, user.passwordHash)) ? user.id : null;
}

/** `GET /auth/session` of a key's session: the key's organization and the projects it reaches, no partner. */
async function keySessionView(services: Services, principal: Extract<Principal, { via: "project_key" | "org_key" }>): Promise<R.Session> {
  const org = await services.orgs.getOrganization(principal.organizationId);
  const role = await services.orgs.keyHolderRole(principal.organizationId, principal.userId);
  if (!org || role === null) throw unauthorized();
  const projectId = principal.via === "project_key" ? principal.projectId : null;
  const projects = (await services.orgs.projectsOf([org.id])).filter((p) => projectId === null || p.id === projectId);
  return {
    user: await userView(services, principal.userId),
    organizations: [{ id: org.id, name: org.name, role }],
    projects: projects.map((p) => ({ id: p.id, name: p.name, organizationId: p.organizationId })),
    partner: null,
    scope: { kind: projectId === null ? "organization" : "project", organizationId: org.id, projectId },
  };
}

export const authRoutes: RouteDef[] = [
  route({
    method: "POST",
    path: "/auth/signup",
    modes: ["cloud"],
    signIn: true,
    response: returnsCreated(R.Signup, "Signed up and signed in; sets the credgate_session cookie"),
    access: "none",
    body: SignupBody,
    handler: async ({ services, body }) => {
      // The claim placeholders' domain is no one's mailbox (`.invalid`), and such an address could never sign in again.
      if (isPlaceholderEmail(body.email)) throw ApiError.flat(400, "email must be a valid email address");
      const { user, organizationId, projectId } = await services.accounts.signUp(body.email, await Bun.password.hash(body.password, "argon2id"), body.name ?? null);
      const headers = await sessionHeaders(services, user.id);
      return created({ user: await userView(services, user.id), organizationId, projectId }, headers);
    },
  }),
  route({
    method: "POST",
    path: "/auth/accept-invite",
    modes: ["cloud"],
    signIn: true,
    response: returns(R.Login, "The password is set; signed in (sets the credgate_session cookie)"),
    access: "none",
    body: AcceptInviteBody,
    handler: async ({ services, body }) => {
      const userId = await services.partners.acceptInvite(body.token, await Bun.password.hash(body.password, "argon2id"));
      if (!userId) throw ApiError.envelope(404, "Invite not found or expired");
      return startSession(services, userId);
    },
  }),
  route({
    method: "POST",
    path: "/claim",
    modes: ["cloud"],
    signIn: true,
    response: returns(R.Claimed, "The signed-in user took the placeholder's place: its membership and keys"),
    access: "session",
    body: ClaimBody,
    handler: async ({ services, principal, body }) => {
      if (principal?.via !== "session") {
        // A key's session is not the person: it cannot take a placeholder's place in their name.
        if (principal && sessionIdOf(principal) !== null) throw forbidden();
        throw unauthorized();
      }
      return services.claims.claim(principal.userId, body.token);
    },
  }),
  route({
    method: "POST",
    path: "/auth/login",
    signIn: true,
    response: returns(R.Login, "Signed in; sets the credgate_session cookie"),
    access: "none",
    body: LoginBody,
    handler: async ({ services, body }) => {
      const throttle = services.loginThrottle;
      if (body.apiKey) {
        const subject = LoginThrottle.subject("key", body.apiKey);
        if (!(await throttle.attempt(subject))) throw TOO_MANY();
        let principal;
        try {
          principal = await authenticateKey(services, body.apiKey);
        } catch {
          throw unauthorized();
        }
        if (principal.via === "partner_key") throw ApiError.envelope(401, AUTH_FAILED);
        await throttle.succeeded(subject);
        return startSession(services, principal.userId, body.apiKey);
      }
      if (services.deps.config.mode !== "cloud") throw ApiError.flat(400, "apiKey is required");
      if (!body.email) throw ApiError.flat(400, "email is required");
      if (!body.password) throw ApiError.flat(400, "password is required");
      const subject = LoginThrottle.subject("email", body.email);
      if (!(await throttle.attempt(subject))) throw TOO_MANY();
      const userId = await passwordUser(services, body.email, body.password);
      if (!userId) throw ApiError.envelope(401, "Invalid email or password");
      await throttle.succeeded(subject);
      return startSession(services, userId);
    },
  }),
  route({
    method: "POST",
    path: "/auth/logout",
    response: returnsNothing("Signed out; the cookie is cleared"),
    access: "session",
    handler: async ({ services, principal }) => {
      const sessionId = principal && sessionIdOf(principal);
      if (!sessionId) throw unauthorized();
      await services.sessions.revoke(sessionId);
      return noContent({ "set-cookie": sessionCookie(services, "", 0) });
    },
  }),
  route({
    method: "GET",
    path: "/auth/session",
    response: returns(R.Session),
    access: "session",
    handler: async ({ services, principal }) => {
      if (!principal || sessionIdOf(principal) === null) throw unauthorized();
      if (principal.via === "project_key" || principal.via === "org_key") return keySessionView(services, principal);
      if (principal.via !== "session") throw unauthorized();
      const organizations = (await services.orgs.membershipsOf(principal.userId)).map((m) => ({ id: m.organizationId, name: m.name, role: m.role }));
      // The projects the session may name in X-Project-Id: what the dashboard's project switcher offers.
      const projects = (await services.orgs.projectsOf(organizations.map((o) => o.id))).map((p) => ({ id: p.id, name: p.name, organizationId: p.organizationId }));
      const scope = { kind: "account" as const, organizationId: null, projectId: null };
      return { user: await userView(services, principal.userId), organizations, projects, partner: await services.partners.membershipOf(principal.userId), scope };
    },
  }),
];
