// Projects of the caller's organization (docs/api.md#projects-and-team, cloud only): list, create (with a Default Agent and
// the creator's project key, returned once), get, rename, delete with everything in it.
import { Type as T } from "@sinclair/typebox";
import { ApiError } from "../../core/errors.ts";
import { projectView } from "../../services/projects.ts";
import { created, noContent, route, type RouteDef } from "../route.ts";
import * as R from "../../core/records/index.ts";
import { returns, returnsCreated, returnsNothing } from "../responses.ts";

const NAME_RULE = "Name must be 2-50 characters with at least one letter or number";
export const ProjectNameBody = T.Object({ name: T.String({ trim: true }) });

/** The name as stored: trimmed, 2-50 characters, with a letter or digit (flat 400 otherwise). */
function projectName(raw: string): string {
  const name = raw.trim();
  if (name.length < 2 || name.length > 50 || !/[\p{L}\p{N}]/u.test(name)) throw ApiError.flat(400, NAME_RULE);
  return name;
}

export const projectRoutes: RouteDef[] = [
  route({
    method: "GET",
    path: "/projects",
    modes: ["cloud"],
    response: returns(T.Array(R.Project), "The organization's projects, oldest first (a project key sees only its own)"),
    access: "organization",
    handler: async ({ services, ctx, principal }) => {
      const all = await services.projects.list(ctx.organizationId);
      const own = principal?.via === "project_key" ? all.filter((p) => p.id === principal.projectId) : all;
      return own.map(projectView);
    },
  }),
  route({
    method: "POST",
    path: "/projects",
    modes: ["cloud"],
    response: returnsCreated(R.ProjectCreated, "The project, with the creator's new project key (returned only here)"),
    access: "organization",
    role: "admin",
    body: ProjectNameBody,
    handler: async ({ services, ctx, body }) => {
      const { project, apiKey } = await services.projects.create(ctx.organizationId, projectName(body.name), { creatorUserId: ctx.userId });
      return created({ ...projectView(project), apiKey });
    },
  }),
  route({
    method: "GET",
    path: "/projects/:projectId",
    modes: ["cloud"],
    response: returns(R.Project),
    access: "organization",
    handler: async ({ services, ctx, params }) => projectView(await services.projects.get(ctx.organizationId, params.projectId)),
  }),
  route({
    method: "PATCH",
    path: "/projects/:projectId",
    modes: ["cloud"],
    response: returns(R.Project, "The renamed project; its slug derived again"),
    access: "organization",
    role: "admin",
    body: ProjectNameBody,
    handler: async ({ services, ctx, params, body }) => projectView(await services.projects.rename(ctx.organizationId, params.projectId, projectName(body.name))),
  }),
  route({
    method: "DELETE",
    path: "/projects/:projectId",
    modes: ["cloud"],
    response: returnsNothing("Deleted, with everything in it; its keys die at once"),
    access: "organization",
    role: "owner",
    handler: async ({ services, ctx, params }) => {
      await services.projects.delete(ctx.organizationId, params.projectId);
      return noContent();
    },
  }),
];
