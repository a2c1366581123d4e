// Migration from a self-hosted instance to the cloud (docs/api.md#migration). Export reads one project's own secrets
// (decrypted here, never returned) and agents and posts them to `<cloudUrl>/v1/migrate/import`; import, on
// the cloud, creates what does not exist yet. Policy rules and grants are counted, not moved. The API route
// and `credgate migrate export` both run `export` below.
import { and, asc, desc, eq, inArray } from "drizzle-orm";
import { isIP } from "node:net";
import { ApiError, badRequest } from "../core/errors.ts";
import { log } from "../observability/log.ts";
import type { AuthMode, InjectionConfigShape } from "../core/secretRules.ts";
import type { AgentMode, SecretMetadata, SecretType } from "../core/model.ts";
import type { AgentService } from "./agents.ts";
import type { ServiceDeps } from "./deps.ts";
import type { Outbound } from "./outbound.ts";
import type { PolicyService } from "./policy.ts";
import type { SecretService } from "./secrets.ts";
import type { MigrationResult, SkippedItem } from "../core/records/migration.ts";

export type { MigrationResult, SkippedItem };

export const MIGRATION_VERSION = 1;

/** One secret as it travels to the cloud: the plaintext value and what is needed to inject it. */
export interface MigratedSecret {
  name: string;
  type: SecretType;
  value: string;
  hostPattern: string;
  pathPattern: string | null;
  injectionConfig: InjectionConfigShape | null;
  metadata: SecretMetadata | null;
}

export interface MigratedAgent {
  name: string;
  identifier: string;
  isDefault: boolean;
  mode: AgentMode;
}

export interface MigrationPayload {
  version: typeof MIGRATION_VERSION;
  secrets: MigratedSecret[];
  agents: MigratedAgent[];
}

/** An import item after route-level validation: usable, or already known to be skipped (and why). */
export type ImportEntry<T> = { ok: true; item: T } | { ok: false; skip: SkippedItem };

export interface ImportSecretItem {
  name: string;
  type: SecretType;
  value: string;
  hostPattern?: string;
  pathPattern?: string | null;
  injectionConfig?: InjectionConfigShape;
  metadata?: { authMode?: AuthMode; accountId?: string } | null;
}

export interface ImportAgentItem {
  name: string;
  identifier: string;
  mode?: AgentMode;
}

export type ExportProgress =
  | { step: "collected"; secrets: number; agents: number; skipped: number }
  | { step: "sending"; batch: number; batches: number; secrets: number; agents: number }
  | { step: "sent"; batch: number; batches: number };

export interface ProjectRef {
  projectId: string;
  organizationId: string;
}

export const CLOUD_URL_MESSAGE = "cloudUrl must be an https URL";
export const ALREADY_EXISTS = "already exists";
export const VAULT_SKIP_REASON = "Sourced from an external vault — re-add this secret after migrating";
export const POLICY_SKIP_REASON = "Policy rules are not migrated. Re-create them in the destination.";
export const GRANTS_SKIP_REASON = "Agent grants are not migrated. Re-attach credentials to agents in the destination.";
export const CONNECTIONS_SKIP_REASON = "App connections are not migrated. Reconnect the apps in the destination.";
export const ORG_SECRETS_SKIP_REASON = "Organization secrets are not migrated. Re-add them to the destination organization.";

/** Batches stay well under the 1 MiB API body limit of the receiving side. */
const BATCH_BYTES = 512 * 1024;
const CLOUD_TIMEOUT_MS = 60_000;
const MAX_CLOUD_MESSAGE = 500;

function isLoopback(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, "").toLowerCase();
  if (h === "localhost" || h.endsWith(".localhost")) return true;
  if (isIP(h) === 4) return h.startsWith("127.");
  return h === "::1";
}

/**
 * The cloud base URL (no trailing slash, no trailing `/v1`), or null when it is not an absolute https URL
 * (plain http only on loopback hosts, for local testing).
 */
export function parseCloudUrl(raw: string): string | null {
  let u: URL;
  try {
    u = new URL(raw.trim());
  } catch {
    return null;
  }
  if (u.username || u.password || !u.hostname) return null;
  if (u.protocol !== "https:" && !(u.protocol === "http:" && isLoopback(u.hostname))) return null;
  const path = u.pathname.replace(/\/+$/, "").replace(/\/v1$/, "");
  return `${u.protocol}//${u.host}${path}`;
}

export const cloudUrlError = (raw: string): string | null => (parseCloudUrl(raw) === null ? CLOUD_URL_MESSAGE : null);

/** The key travels in an Authorization header: visible ASCII only (an API key always is). */
export const cloudApiKeyError = (key: string): string | null => (/^[\x21-\x7e]+$/.test(key) ? null : "cloudApiKey is invalid");

const plural = (n: number, word: string) => `${n} ${word}(s)`;

function emptyResult(): MigrationResult {
  return { imported: { secrets: 0, agents: 0, agentSecrets: 0, rules: 0 }, skipped: [] };
}

function isCount(v: unknown): v is number {
  return typeof v === "number" && Number.isInteger(v) && v >= 0;
}

/** The cloud's answer, if it has the Migration result shape. */
function asResult(body: unknown): MigrationResult | null {
  if (typeof body !== "object" || body === null) return null;
  const { imported, skipped } = body as { imported?: Record<string, unknown>; skipped?: unknown };
  if (typeof imported !== "object" || imported === null || !Array.isArray(skipped)) return null;
  const counts = [imported.secrets, imported.agents, imported.agentSecrets, imported.rules];
  if (!counts.every(isCount)) return null;
  const items: SkippedItem[] = [];
  for (const s of skipped) {
    if (typeof s !== "object" || s === null) return null;
    const { type, name, reason } = s as Record<string, unknown>;
    if (typeof type !== "string" || typeof name !== "string" || typeof reason !== "string") return null;
    items.push({ type, name, reason });
  }
  const [sec, ag, as, ru] = counts as number[];
  return { imported: { secrets: sec!, agents: ag!, agentSecrets: as!, rules: ru! }, skipped: items };
}

function cloudMessage(body: unknown): string | null {
  if (typeof body !== "object" || body === null) return null;
  const e = (body as { error?: unknown }).error;
  const message = typeof e === "string" ? e : typeof e === "object" && e !== null ? (e as { message?: unknown }).message : null;
  if (typeof message !== "string" || message.trim() === "") return null;
  return message.length > MAX_CLOUD_MESSAGE ? `${message.slice(0, MAX_CLOUD_MESSAGE)}…` : message;
}

const importFailed = (why: string): ApiError => badRequest(`Cloud import failed: ${why}`);

/** Splits the payload into requests of at most BATCH_BYTES each (agents first, then secrets). */
function batches(payload: MigrationPayload): MigrationPayload[] {
  const out: MigrationPayload[] = [];
  let current: MigrationPayload = { version: MIGRATION_VERSION, secrets: [], agents: [] };
  let size = 0;
  const add = (kind: "agents" | "secrets", item: MigratedAgent | MigratedSecret) => {
    const bytes = Buffer.byteLength(JSON.stringify(item)) + 1;
    if (size > 0 && size + bytes > BATCH_BYTES) {
      out.push(current);
      current = { version: MIGRATION_VERSION, secrets: [], agents: [] };
      size = 0;
    }
    (current[kind] as unknown[]).push(item);
    size += bytes;
  };
  for (const a of payload.agents) add("agents", a);
  for (const s of payload.secrets) add("secrets", s);
  if (size > 0) out.push(current);
  return out;
}

export class MigrationService {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly secretService: SecretService,
    private readonly agentService: AgentService,
    private readonly policy: PolicyService,
    private readonly outbound: Outbound,
  ) {}

  private get db() {
    return this.deps.store.db;
  }

  private get t() {
    return this.deps.store.t;
  }

  /** What export sends (plaintext values included) and what it leaves behind, read in one transaction. */
  collect(project: ProjectRef): Promise<{ payload: MigrationPayload; skipped: SkippedItem[] }> {
    const { secrets, agents, agentSecretGrants, agentConnectionGrants, appConnections } = this.t;
    return this.deps.store.transaction(async () => {
      const skipped: SkippedItem[] = [];
      const payload: MigrationPayload = { version: MIGRATION_VERSION, secrets: [], agents: [] };
      // Creation order (createdAt is unique per process, see creationTime), so the destination lists them the same.
      const rows = await this.db
        .select()
        .from(secrets)
        .where(and(eq(secrets.scope, "project"), eq(secrets.projectId, project.projectId)))
        .orderBy(asc(secrets.createdAt), asc(secrets.id));
      for (const row of rows) {
        const value = row.valueSource === "inline" ? this.secretService.openValue(row) : null;
        if (value === null) {
          skipped.push({ type: row.type, name: row.name, reason: VAULT_SKIP_REASON });
          continue;
        }
        const metadata = row.metadata ? { ...row.metadata } : null;
        if (metadata) delete metadata.opDisplay;
        payload.secrets.push({
          name: row.name,
          type: row.type,
          value,
          hostPattern: row.hostPattern,
          pathPattern: row.pathPattern,
          injectionConfig: row.injectionConfig,
          metadata,
        });
      }
      const agentRows = await this.db.select().from(agents).where(eq(agents.projectId, project.projectId)).orderBy(desc(agents.isDefault), asc(agents.createdAt), asc(agents.id));
      for (const a of agentRows) payload.agents.push({ name: a.name, identifier: a.identifier, isDefault: a.isDefault, mode: a.mode });

      const owner = { scope: "project" as const, projectId: project.projectId, organizationId: project.organizationId };
      const logical = new Set<string>();
      for (const r of [...(await this.policy.customRules(owner, "draft")), ...(await this.policy.customRules(owner, "published"))]) {
        if (r.source === "custom") logical.add(r.logicalId);
      }
      if (logical.size > 0) skipped.push({ type: "policy", name: plural(logical.size, "policy rule"), reason: POLICY_SKIP_REASON });

      const agentIds = agentRows.map((a) => a.id);
      const grants =
        agentIds.length === 0
          ? 0
          : (await this.db.select({ a: agentSecretGrants.agentId }).from(agentSecretGrants).where(inArray(agentSecretGrants.agentId, agentIds))).length +
            (await this.db.select({ a: agentConnectionGrants.agentId }).from(agentConnectionGrants).where(inArray(agentConnectionGrants.agentId, agentIds))).length;
      if (grants > 0) skipped.push({ type: "grants", name: plural(grants, "agent grant"), reason: GRANTS_SKIP_REASON });

      // App connections hold OAuth tokens issued to this deployment's OAuth clients: they are reconnected, not copied.
      const connections = (
        await this.db
          .select({ id: appConnections.id })
          .from(appConnections)
          .where(and(eq(appConnections.scope, "project"), eq(appConnections.projectId, project.projectId)))
      ).length;
      if (connections > 0) skipped.push({ type: "connections", name: plural(connections, "app connection"), reason: CONNECTIONS_SKIP_REASON });

      // Organization secrets also reach this project's agents here; say that they stay behind.
      const orgSecrets = (await this.secretService.rows({ scope: "organization", organizationId: project.organizationId })).length;
      if (orgSecrets > 0) skipped.push({ type: "organization", name: plural(orgSecrets, "organization secret"), reason: ORG_SECRETS_SKIP_REASON });
      return { payload, skipped };
    });
  }

  /**
   * Sends the project to the cloud. `cloudUrl` must already be valid (parseCloudUrl). Large projects go in
   * several requests; the import skips what already exists, so a failed export can simply be re-run.
   */
  async export(project: ProjectRef, input: { cloudUrl: string; cloudApiKey: string }, onProgress?: (p: ExportProgress) => void): Promise<MigrationResult> {
    const base = parseCloudUrl(input.cloudUrl);
    if (base === null) throw ApiError.flat(400, CLOUD_URL_MESSAGE);
    const keyError = cloudApiKeyError(input.cloudApiKey);
    if (keyError) throw ApiError.flat(400, keyError);
    const { payload, skipped } = await this.collect(project);
    onProgress?.({ step: "collected", secrets: payload.secrets.length, agents: payload.agents.length, skipped: skipped.length });
    const result = emptyResult();
    result.skipped.push(...skipped);
    const parts = batches(payload);
    const cloudHost = new URL(base).host;
    for (let i = 0; i < parts.length; i++) {
      const part = parts[i]!;
      onProgress?.({ step: "sending", batch: i + 1, batches: parts.length, secrets: part.secrets.length, agents: part.agents.length });
      let answer: MigrationResult;
      try {
        answer = await this.send(base, input.cloudUrl.trim(), input.cloudApiKey, part);
      } catch (err) {
        log.warn("migration export failed", { projectId: project.projectId, cloudHost, part: i + 1, parts: parts.length, error: (err as Error).message });
        throw err;
      }
      for (const k of ["secrets", "agents", "agentSecrets", "rules"] as const) result.imported[k] += answer.imported[k];
      result.skipped.push(...answer.skipped);
      onProgress?.({ step: "sent", batch: i + 1, batches: parts.length });
    }
    log.info("migration export", { projectId: project.projectId, cloudHost, parts: parts.length, ...result.imported, skipped: result.skipped.length });
    return result;
  }

  private async send(base: string, shownUrl: string, cloudApiKey: string, payload: MigrationPayload): Promise<MigrationResult> {
    let res: Response;
    let text: string;
    try {
      res = await this.outbound.fetch(`${base}/v1/migrate/import`, {
        method: "POST",
        headers: { authorization: `Bearer ${cloudApiKey}`, "content-type": "application/json", accept: "application/json" },
        body: JSON.stringify(payload),
        // A redirect must not carry the secrets somewhere else.
        redirect: "manual",
        signal: AbortSignal.timeout(CLOUD_TIMEOUT_MS),
      });
      text = await res.text();
    } catch {
      throw importFailed(`could not reach ${shownUrl}`);
    }
    let body: unknown = null;
    try {
      body = JSON.parse(text);
    } catch {}
    if (res.status < 200 || res.status > 299) throw importFailed(cloudMessage(body) ?? `Cloud returned ${res.status}`);
    const result = asResult(body);
    if (!result) throw importFailed(`Cloud returned ${res.status} with an unexpected response`);
    return result;
  }

  /**
   * The receiving side: creates each valid item that does not exist yet, in order, in one transaction.
   * Invalid items arrive already turned into skip entries; service-level refusals become skip entries too.
   */
  async import(project: ProjectRef, entries: { secrets: ImportEntry<ImportSecretItem>[]; agents: ImportEntry<ImportAgentItem>[] }): Promise<MigrationResult> {
    const result = emptyResult();
    const owner = { scope: "project" as const, projectId: project.projectId, organizationId: project.organizationId };
    const { secrets } = this.t;
    await this.deps.store.transaction(async () => {
      for (const entry of entries.secrets) {
        if (!entry.ok) {
          result.skipped.push(entry.skip);
          continue;
        }
        const s = entry.item;
        const [exists] = await this.db
          .select({ id: secrets.id })
          .from(secrets)
          .where(and(eq(secrets.scope, "project"), eq(secrets.projectId, project.projectId), eq(secrets.name, s.name)))
          .limit(1);
        if (exists) {
          result.skipped.push({ type: s.type, name: s.name, reason: ALREADY_EXISTS });
          continue;
        }
        try {
          await this.secretService.create(owner, {
            name: s.name,
            type: s.type,
            valueSource: "inline",
            value: s.value,
            ...(s.hostPattern !== undefined && { hostPattern: s.hostPattern }),
            ...(s.pathPattern !== undefined && s.pathPattern !== null && { pathPattern: s.pathPattern }),
            ...(s.injectionConfig !== undefined && { injectionConfig: s.injectionConfig }),
            ...(s.metadata && { metadata: s.metadata }),
          });
          result.imported.secrets++;
        } catch (err) {
          if (!(err instanceof ApiError)) throw err;
          result.skipped.push({ type: s.type, name: s.name, reason: err.message });
        }
      }
      for (const entry of entries.agents) {
        if (!entry.ok) {
          result.skipped.push(entry.skip);
          continue;
        }
        const a = entry.item;
        if (await this.agentService.findByIdentifier(project.projectId, a.identifier)) {
          result.skipped.push({ type: "agent", name: a.name, reason: ALREADY_EXISTS });
          continue;
        }
        await this.agentService.create(project.projectId, { name: a.name, identifier: a.identifier, mode: a.mode ?? "grants" });
        result.imported.agents++;
      }
    });
    log.info("migration import", { projectId: project.projectId, ...result.imported, skipped: result.skipped.length });
    return result;
  }
}
