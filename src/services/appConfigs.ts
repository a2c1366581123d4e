// Bring-your-own-credentials app configuration (docs/injection.md#app-connections config rows, docs/api.md#organization-level-routes): an OAuth client of a
// project or organization. Secret fields are sealed; the non-secret ones are shown back as `settings`.
import { and, eq } from "drizzle-orm";
import type { AppDefinition } from "../apps/types.ts";
import { ApiError } from "../core/errors.ts";
import { newId, nowIso } from "../core/ids.ts";
import type { AppConfigRow } from "../store/rows.ts";
import type { ServiceDeps } from "./deps.ts";
import type { PolicyOwner } from "./policy.ts";
import type { AppConfig } from "../core/records/apps.ts";

export type { AppConfigRow };

export interface OAuthClient {
  clientId: string;
  clientSecret: string;
}

export const APP_CONFIG_NOT_FOUND = "App config not found";
export const INVALID_BODY = "Invalid request body";

export class AppConfigService {
  constructor(private readonly deps: ServiceDeps) {}

  private get db() {
    return this.deps.store.db;
  }

  private get t() {
    return this.deps.store.t;
  }

  private ownerWhere(owner: PolicyOwner, provider: string) {
    const { appConfigs } = this.t;
    const scope =
      owner.scope === "project"
        ? and(eq(appConfigs.scope, "project"), eq(appConfigs.projectId, owner.projectId))
        : and(eq(appConfigs.scope, "organization"), eq(appConfigs.organizationId, owner.organizationId));
    return and(scope, eq(appConfigs.provider, provider))!;
  }

  async row(owner: PolicyOwner, provider: string): Promise<AppConfigRow | null> {
    const [row] = await this.db.select().from(this.t.appConfigs).where(this.ownerWhere(owner, provider)).limit(1);
    return row ?? null;
  }

  private secretFields(row: AppConfigRow): Record<string, string> {
    return row.secretsSealed ? (JSON.parse(this.deps.sealer.open(row.secretsSealed)) as Record<string, string>) : {};
  }

  private ownView(row: AppConfigRow): AppConfig {
    return { settings: row.settings, hasCredentials: row.secretsSealed !== null || Object.keys(row.settings).length > 0, enabled: row.enabled };
  }

  /** What a scope's config read shows: its own config; for a project without one, the organization's when it applies. */
  async view(owner: PolicyOwner, provider: string): Promise<AppConfig | null> {
    const own = await this.row(owner, provider);
    if (own?.enabled) return this.ownView(own);
    // A project without an enabled config of its own uses the organization's, when that one is enabled.
    if (owner.scope === "project") {
      const org = await this.row({ scope: "organization", organizationId: owner.organizationId }, provider);
      if (org?.enabled) return { settings: {}, hasCredentials: true, enabled: true, source: "organization" };
    }
    return own ? this.ownView(own) : null;
  }

  /**
   * Stores the app's credential fields (unknown keys already stripped). Every field is required; an empty
   * secret field keeps the stored value. Saving enables the config.
   */
  async save(owner: PolicyOwner, app: AppDefinition, body: Record<string, unknown>): Promise<void> {
    const { appConfigs } = this.t;
    const existing = await this.row(owner, app.id);
    const kept = existing ? this.secretFields(existing) : {};
    const settings: Record<string, string> = {};
    const secrets: Record<string, string> = {};
    for (const field of app.fields) {
      const raw = body[field.name];
      if (raw !== undefined && typeof raw !== "string") throw ApiError.flat(400, INVALID_BODY);
      const value = (raw ?? "").trim();
      if (field.secret) {
        const v = value || kept[field.name] || "";
        if (!v) throw ApiError.flat(400, INVALID_BODY);
        secrets[field.name] = v;
      } else {
        if (!value) throw ApiError.flat(400, INVALID_BODY);
        settings[field.name] = value;
      }
    }
    const now = nowIso();
    const secretsSealed = Object.keys(secrets).length > 0 ? this.deps.sealer.seal(JSON.stringify(secrets)) : null;
    await this.deps.store.transaction(async () => {
      if (existing) {
        await this.db.update(appConfigs).set({ settings, secretsSealed, enabled: true, updatedAt: now }).where(eq(appConfigs.id, existing.id));
        await this.#audit(existing, existing, { ...existing, settings, secretsSealed, enabled: true });
        return;
      }
      const row = {
        id: newId(),
        scope: owner.scope,
        organizationId: owner.organizationId,
        projectId: owner.scope === "project" ? owner.projectId : null,
        provider: app.id,
        settings,
        secretsSealed,
        enabled: true,
        createdAt: now,
        updatedAt: now,
      };
      await this.db.insert(appConfigs).values(row);
      await this.#audit(row, null, row);
    });
  }

  /** An app configuration's change in the current write's audit event (docs/operations.md#audit-log). */
  #audit(config: { id: string; projectId: string | null }, before: object | null, after: object | null): Promise<void> {
    return this.deps.audit.record({ targetType: "app_config", targetId: config.id, projectId: config.projectId, before, after });
  }

  async delete(owner: PolicyOwner, provider: string): Promise<void> {
    const row = await this.row(owner, provider);
    if (!row) throw ApiError.envelope(404, APP_CONFIG_NOT_FOUND);
    await this.deps.store.transaction(async () => {
      await this.db.delete(this.t.appConfigs).where(eq(this.t.appConfigs.id, row.id));
      await this.#audit(row, row, null);
    });
  }

  async toggle(owner: PolicyOwner, provider: string, enabled: boolean): Promise<void> {
    const row = await this.row(owner, provider);
    if (!row) throw ApiError.envelope(404, APP_CONFIG_NOT_FOUND);
    await this.deps.store.transaction(async () => {
      await this.db.update(this.t.appConfigs).set({ enabled, updatedAt: nowIso() }).where(eq(this.t.appConfigs.id, row.id));
      await this.#audit(row, row, { ...row, enabled });
    });
  }

  /** The OAuth client for a scope: enabled project config → enabled organization config → env → null. */
  async oauthClient(owner: PolicyOwner, provider: string): Promise<OAuthClient | null> {
    const candidates = owner.scope === "project" ? [owner, { scope: "organization" as const, organizationId: owner.organizationId }] : [owner];
    for (const o of candidates) {
      const row = await this.row(o, provider);
      if (!row?.enabled) continue;
      const secrets = this.secretFields(row);
      const clientId = row.settings.clientId ?? secrets.clientId;
      if (clientId) return { clientId, clientSecret: secrets.clientSecret ?? "" };
    }
    const env = this.deps.config.oauthClients.get(provider);
    return env?.clientId ? { clientId: env.clientId, clientSecret: env.clientSecret } : null;
  }
}
