// Sessions for the dashboard (CONTRACT §5.16): login with an API key (both modes) or, on cloud, with an
// email and password; logout; the current session.
import { t } from "elysia";
import { ApiError, AUTH_FAILED, unauthorized } from "../../core/errors.ts";
import { tokenHash } from "../../crypto/hash.ts";
import type { Services } from "../../services/index.ts";
import { SESSION_COOKIE, SESSION_LIFETIME_MS } from "../../services/sessions.ts";
import { authenticateKey } from "../auth.ts";
import { json } from "../errors.ts";
import { noContent, route, type RouteDef } from "../route.ts";
import * as S from "../schemas.ts";
import { returns, returnsNothing } from "../responses.ts";

export const LoginBody = t.Object({
  apiKey: t.Optional(t.String({ trim: true })),
  email: t.Optional(t.String({ trim: true, maxLength: 255 })),
  password: t.Optional(t.String({ maxLength: 256 })),
});

const TOO_MANY = (): ApiError => ApiError.envelope(429, "Too many attempts, try again later");

function sessionCookie(services: Services, value: string, maxAgeSeconds: number): string {
  const secure = services.deps.config.publicUrl.startsWith("https:") ? "; Secure" : "";
  return `${SESSION_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${maxAgeSeconds}${secure}`;
}

async function userView(services: Services, userId: string) {
  const u = (await services.orgs.getUser(userId))!;
  return { id: u.id, email: u.email, name: u.name, createdAt: u.createdAt };
}

async function startSession(services: Services, userId: string): Promise<Response> {
  const { token } = await services.sessions.create(userId);
  return json({ user: await userView(services, userId) }, 200, { "set-cookie": sessionCookie(services, token, SESSION_LIFETIME_MS / 1000) });
}

async function passwordUser(services: Services, email: string, password: string): Promise<string | null> {
  const user = await services.orgs.getUserByEmail(email);
  if (!user?.passwordHash) return null;
  return (await Bun.password.verify(password, user.passwordHash)) ? user.id : null;
}

export const authRoutes: RouteDef[] = [
  route({
    method: "POST",
    path: "/auth/login",
    response: returns(S.Login, "Signed in; sets the credgate_session cookie"),
    access: "none",
    body: LoginBody,
    handler: async ({ services, body }) => {
      const throttle = services.loginThrottle;
      if (body.apiKey) {
        const subject = `key:${tokenHash(body.apiKey)}`;
        if (throttle.blocked(subject)) throw TOO_MANY();
        let principal;
        try {
          principal = await authenticateKey(services, body.apiKey);
        } catch {
          throttle.fail(subject);
          throw unauthorized();
        }
        if (principal.via === "partner_key") throw ApiError.envelope(401, AUTH_FAILED);
        throttle.succeed(subject);
        return startSession(services, principal.userId);
      }
      if (services.deps.config.mode !== "cloud") throw ApiError.flat(400, "apiKey is required");
      if (!body.email) throw ApiError.flat(400, "email is required");
      if (!body.password) throw ApiError.flat(400, "password is required");
      const subject = `email:${body.email.toLowerCase()}`;
      if (throttle.blocked(subject)) throw TOO_MANY();
      const userId = await passwordUser(services, body.email, body.password);
      if (!userId) {
        throttle.fail(subject);
        throw ApiError.envelope(401, "Invalid email or password");
      }
      throttle.succeed(subject);
      return startSession(services, userId);
    },
  }),
  route({
    method: "POST",
    path: "/auth/logout",
    response: returnsNothing("Signed out; the cookie is cleared"),
    access: "session",
    handler: async ({ services, principal }) => {
      if (principal?.via !== "session") throw unauthorized();
      await services.sessions.revoke(principal.sessionId);
      const r = noContent();
      r.headers["set-cookie"] = sessionCookie(services, "", 0);
      return r;
    },
  }),
  route({
    method: "GET",
    path: "/auth/session",
    response: returns(S.Session),
    access: "session",
    handler: async ({ services, principal }) => {
      if (principal?.via !== "session") throw unauthorized();
      const organizations = (await services.orgs.membershipsOf(principal.userId)).map((m) => ({ id: m.organizationId, name: m.name, role: m.role }));
      // The projects the session may name in X-Project-Id: what the dashboard's project switcher offers.
      const projects = (await services.orgs.projectsOf(organizations.map((o) => o.id))).map((p) => ({ id: p.id, name: p.name, organizationId: p.organizationId }));
      return { user: await userView(services, principal.userId), organizations, projects, partner: null };
    },
  }),
];
