// SSH keys (docs/ssh.md#keys): a key credgate generates for a new `ssh` secret, the public half of any `ssh`
// secret (the line to add at the forge), and the SSH CA line agents trust (no authentication, like /gateway/ca).
import { Type as T } from "@sinclair/typebox";
import { badRequest, notFound } from "../../core/errors.ts";
import { hostPatternError, HOST_MESSAGES } from "../../core/patterns.ts";
import { sshConfigError } from "../../core/sshRules.ts";
import type { SshConfig } from "../../core/records/secrets.ts";
import { generateEd25519, publicKeyLine } from "../../crypto/sshKeys.ts";
import { loadSshCa } from "../../services/sshCa.ts";
import type { SecretOwner, SecretRow } from "../../services/secrets.ts";
import type { Services } from "../../services/index.ts";
import type { RequestContext } from "../auth.ts";
import { created, route, type RouteDef } from "../route.ts";
import { refined } from "../validate.ts";
import * as R from "../../core/records/index.ts";
import { returns, returnsCreated, returnsText } from "../responses.ts";

export const NOT_SSH_MESSAGE = "This secret is not an SSH key";
export const SSH_KEY_IN_VAULT_MESSAGE = "The key of this secret is not stored in credgate";

const GenerateBody = T.Object({
  name: T.String({ minLength: 1, maxLength: 255, trim: true }),
  hostPattern: T.String({ trim: true, missing: HOST_MESSAGES.required, refine: (v: string) => hostPatternError(v) }),
  ssh: refined<SshConfig>({ refine: (v: unknown) => sshConfigError(v)?.replace("injectionConfig.ssh", "ssh") ?? null }),
});

const PublicKey = T.Object({ publicKey: T.String({ description: "`<type> <base64> <comment>`: add it at the forge as a deploy key or user key" }) }, { $id: "SshPublicKey" });
const Generated = T.Object({ ...R.SecretCreated.properties, ...PublicKey.properties }, { $id: "SshKeyCreated" });

const projectOwner = (ctx: RequestContext): SecretOwner => ({ scope: "project", projectId: ctx.projectId, organizationId: ctx.organizationId });
const orgOwner = (ctx: RequestContext): SecretOwner => ({ scope: "organization", organizationId: ctx.organizationId });

function publicKeyOf(services: Services, row: SecretRow): { publicKey: string } {
  if (row.injectionConfig?.ssh === undefined) throw badRequest(NOT_SSH_MESSAGE);
  const value = services.secrets.openValue(row);
  const line = value === null ? null : publicKeyLine(value, `credgate-${row.name}`);
  if (line === null) throw badRequest(SSH_KEY_IN_VAULT_MESSAGE);
  return { publicKey: line };
}

/** A secret the project may read: its own, else its organization's (as GET /secrets/{id}). */
async function projectVisible(services: Services, ctx: RequestContext, id: string): Promise<SecretRow> {
  try {
    return await services.secrets.find(projectOwner(ctx), id);
  } catch {
    return services.secrets.find(orgOwner(ctx), id).catch(() => {
      throw notFound("Secret not found");
    });
  }
}

function generateRoute(path: "/secrets/generate-ssh-key" | "/org/secrets/generate-ssh-key", access: "project" | "organization"): RouteDef {
  return route({
    method: "POST",
    path,
    response: returnsCreated(Generated),
    access,
    role: access === "organization" ? "admin" : "any",
    body: GenerateBody,
    handler: async ({ services, ctx, body }) => {
      const key = generateEd25519(`credgate-${body.name}`);
      const owner = access === "project" ? projectOwner(ctx as RequestContext) : orgOwner(ctx as RequestContext);
      const secret = await services.secrets.create(owner, { name: body.name, type: "generic", value: key.privateKey.trim(), hostPattern: body.hostPattern, injectionConfig: { ssh: body.ssh } });
      return created({ ...secret, publicKey: key.publicKey });
    },
  });
}

export const sshKeyRoutes: RouteDef[] = [
  generateRoute("/secrets/generate-ssh-key", "project"),
  generateRoute("/org/secrets/generate-ssh-key", "organization"),
  route({
    method: "GET",
    path: "/secrets/:secretId/public-key",
    response: returns(PublicKey),
    access: "project",
    handler: async ({ services, ctx, params }) => publicKeyOf(services, await projectVisible(services, ctx, params.secretId)),
  }),
  route({
    method: "GET",
    path: "/org/secrets/:secretId/public-key",
    response: returns(PublicKey),
    access: "organization",
    role: "admin",
    handler: async ({ services, ctx, params }) => publicKeyOf(services, await services.secrets.find(orgOwner(ctx), params.secretId)),
  }),
  route({
    method: "GET",
    path: "/gateway/ssh-ca",
    response: returnsText("text/plain", "`@cert-authority * ssh-ed25519 <base64> credgate`: the known_hosts line that trusts credgate's SSH host certificates"),
    access: "none",
    handler: async ({ services }) =>
      new Response(`${(await loadSshCa(services.deps)).knownHostsLine()}\n`, { headers: { "content-type": "text/plain; charset=utf-8" } }),
  }),
];
