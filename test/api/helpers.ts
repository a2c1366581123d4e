// Assertions on the two error shapes of docs/api.md#error-shapes and small fixtures shared by the API suites.
import { expect } from "bun:test";
import type { TestApi } from "../support/app.ts";

type Res = { status: number; body: any; headers: Headers; text: string };

const TYPE_BY_STATUS: Record<number, string> = {
  400: "invalid_request_error",
  401: "authentication_error",
  403: "authentication_error",
  404: "not_found_error",
  409: "invalid_request_error",
  410: "invalid_request_error",
  413: "invalid_request_error",
  422: "validation_error",
  429: "rate_limit_error",
  500: "api_error",
};

/** `{"error":{"message","type"}}` with the type docs/api.md#error-shapes assigns to the status. */
export function expectEnvelope(res: Res, status: number, message: string): void {
  expect({ status: res.status, body: res.body }).toEqual({ status, body: { error: { message, type: TYPE_BY_STATUS[status]! } } });
  expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
}

/** `{"error":"<message>"}`. */
export function expectFlat(res: Res, status: number, message: string): void {
  expect({ status: res.status, body: res.body }).toEqual({ status, body: { error: message } });
  expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
}

export const AUTH_FAILED = "Invalid API key or token.";

export function expectUnauthorized(res: Res): void {
  expectEnvelope(res, 401, AUTH_FAILED);
}

/** True when the body is one of the two error shapes of docs/api.md#error-shapes. */
export function isErrorShape(body: unknown): boolean {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return false;
  const e = (body as { error?: unknown }).error;
  if (typeof e === "string") return e.length > 0;
  if (typeof e !== "object" || e === null) return false;
  const { message, type } = e as { message?: unknown; type?: unknown };
  return typeof message === "string" && message.length > 0 && typeof type === "string" && Object.keys(e).length === 2;
}

/** A new user with the given role in the bootstrap organization, holding a project key (and an org key). */
export async function addMember(api: TestApi, role: "owner" | "admin" | "member", email = `${role}-${crypto.randomUUID().slice(0, 8)}@example.com`) {
  const { orgs, apiKeys } = api.core.services;
  const user = await orgs.createUser(email, `User ${role}`);
  await orgs.addMember(api.organizationId, user.id, role);
  const projectKey = await apiKeys.keyFor({ kind: "project", userId: user.id, projectId: api.projectId, organizationId: api.organizationId });
  const orgKey = await apiKeys.keyFor({ kind: "organization", userId: user.id, organizationId: api.organizationId });
  return { user, projectKey, orgKey };
}

/** Another project in the bootstrap organization, with a project key for the bootstrap owner. */
export async function addProject(api: TestApi, name = "Second Project") {
  const { orgs, apiKeys, agents } = api.core.services;
  const project = await orgs.createProject(api.organizationId, name);
  await agents.createDefault(project.id);
  const owner = api.core.bootstrap.userId;
  const projectKey = await apiKeys.keyFor({ kind: "project", userId: owner, projectId: project.id, organizationId: api.organizationId });
  return { project, projectKey };
}

/** A separate organization with its own project and owner (and their keys). */
export async function addOrganization(api: TestApi, name = "Other Org") {
  const { orgs, apiKeys, agents } = api.core.services;
  const org = await orgs.createOrganization(name);
  const project = await orgs.createProject(org.id, "Other Project");
  await agents.createDefault(project.id);
  const user = await orgs.createUser(`owner-${org.id}@example.com`, "Other Owner");
  await orgs.addMember(org.id, user.id, "owner");
  const projectKey = await apiKeys.keyFor({ kind: "project", userId: user.id, projectId: project.id, organizationId: org.id });
  const orgKey = await apiKeys.keyFor({ kind: "organization", userId: user.id, organizationId: org.id });
  return { org, project, user, projectKey, orgKey };
}

export const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
export const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
export const AGENT_TOKEN = /^agt_[0-9a-f]{64}$/;
