// Secrets at project, organization and partner level. Values are sealed on write and never returned;
// the gateway reads them through the snapshot, not through the API.
import { and, desc, eq, inArray, ne, or, type SQL } from "drizzle-orm";
import { ApiError, badRequest, notFound } from "../core/errors.ts";
import { creationTime, newId, nowIso } from "../core/ids.ts";
import {
  GITHUB_APP_KEY_MESSAGE,
  HEADER_VALUE_MESSAGE,
  INJECTION_REQUIRED_MESSAGE,
  PATH_VALUE_MESSAGE,
  TYPE_LABELS,
  defaultLlmHost,
  injectsIntoHeader,
  injectsIntoPath,
  isGithubAppKey,
  isCloudIdentity,
  isHeaderSafeValue,
  isPathSafeValue,
  normalizeInjectionConfig,
  parseInjectionConfig,
  normalizeLlmValue,
  previewOf,
  type AuthMode,
  type InjectionConfigShape,
} from "../core/secretRules.ts";
import { DATABASE_PARTNER_MESSAGE, databaseHostError } from "../core/databaseRules.ts";
import { SSH_KEY_MESSAGE, SSH_PARTNER_MESSAGE } from "../core/sshRules.ts";
import { parseSshPrivateKey } from "../crypto/sshKeys.ts";
import type { SecretType, ValueSource } from "../core/model.ts";
import type { InjectionConfig, Secret, SecretCreated, SecretMetadata } from "../core/records/secrets.ts";
import type { SecretRow } from "../store/rows.ts";
import type { ServiceDeps } from "./deps.ts";
import { placeholdersClash, placeholderTakenMessage } from "../core/placeholders.ts";
import { coversVendorSuffix, GCP_DEFAULT_HOST, GCP_KEY_MESSAGE, parseGcpKey } from "../core/cloudIdentity.ts";
import { HOST_MESSAGES } from "../core/patterns.ts";
import { parseStoreRef, type StoreRef } from "../core/storeRefs.ts";

export type { SecretRow };

/** Where a secret lives: exactly one of project, organization or partner. */
export type SecretOwner =
  | { scope: "project"; projectId: string; organizationId: string }
  | { scope: "organization"; organizationId: string }
  | { scope: "partner"; partnerId: string };

export type { Secret, SecretCreated };

export interface CreateSecretInput {
  name: string;
  type: SecretType;
  valueSource?: ValueSource;
  value?: string;
  opRef?: string;
  /** valueSource `vault` (docs/injection.md#secret-stores): checked by the route's parser. */
  storeRef?: string;
  opDisplay?: { vault?: string; item?: string; field?: string };
  /** `accountId` is only passed by the migration import (the API body schema does not carry it). */
  metadata?: { authMode?: AuthMode; accountId?: string };
  hostPattern?: string;
  pathPattern?: string | null;
  injectionConfig?: InjectionConfig;
}

export interface UpdateSecretInput {
  name?: string;
  valueSource?: ValueSource;
  value?: string;
  opRef?: string;
  storeRef?: string;
  opDisplay?: { vault?: string; item?: string; field?: string };
  hostPattern?: string;
  pathPattern?: string | null;
  /** Checked here: only the stored type says whether it applies (LLM secrets ignore it). */
  injectionConfig?: unknown;
}

export const SECRET_NOT_FOUND = "Secret not found";
export const VAULT_SCOPE_MESSAGE = "External vault is only available for project-scoped secrets";
export const VAULT_UNCONFIGURED_MESSAGE = "External vault is not configured on this server";
export const NO_FIELDS_MESSAGE = "No fields to update";
export const STORE_REF_REQUIRED_MESSAGE = "storeRef is required when valueSource is vault";
export const VAULT_DB_DATABASE_ONLY_MESSAGE = "vault-db:// references are only for database secrets (injectionConfig.database)";

/** Which secret stores this instance can read (the resolver answers: services/index.ts wires it). */
export interface StoreAvailability {
  /** The 400 message when `ref`'s store is not configured here; null when it is. */
  unavailable(ref: StoreRef): string | null;
}

function blankToNull(s: string | null | undefined): string | null {
  return s === undefined || s === null || s.trim() === "" ? null : s.trim();
}

export class SecretService {
  /** Set once by createServices: which stores are configured. */
  stores: StoreAvailability | null = null;

  constructor(private readonly deps: ServiceDeps) {}

  private get db() {
    return this.deps.store.db;
  }

  private get t() {
    return this.deps.store.t;
  }

  view(row: SecretRow): Secret {
    return {
      id: row.id,
      name: row.name,
      type: row.type,
      valueSource: row.valueSource,
      opRef: row.opRef,
      storeRef: row.storeRef,
      hostPattern: row.hostPattern,
      pathPattern: row.pathPattern,
      injectionConfig: row.injectionConfig,
      metadata: row.metadata,
      scope: row.scope,
      typeLabel: TYPE_LABELS[row.type],
      createdAt: row.createdAt,
    };
  }

  private ownerFilter(owner: SecretOwner): SQL {
    const { secrets } = this.t;
    switch (owner.scope) {
      case "project":
        return and(eq(secrets.scope, "project"), eq(secrets.projectId, owner.projectId))!;
      case "organization":
        return and(eq(secrets.scope, "organization"), eq(secrets.organizationId, owner.organizationId))!;
      case "partner":
        return and(eq(secrets.scope, "partner"), eq(secrets.partnerId, owner.partnerId))!;
    }
  }

  /** Rows of one owner, newest first. */
  rows(owner: SecretOwner): Promise<SecretRow[]> {
    const { secrets } = this.t;
    return this.db.select().from(secrets).where(this.ownerFilter(owner)).orderBy(desc(secrets.createdAt), desc(secrets.id));
  }

  async list(owner: SecretOwner): Promise<Secret[]> {
    return (await this.rows(owner)).map((r) => this.view(r));
  }

  /** A project's list: its own secrets plus the organization's, newest first (seed). */
  async listForProject(projectId: string, organizationId: string): Promise<Secret[]> {
    const { secrets } = this.t;
    const rows = await this.db
      .select()
      .from(secrets)
      .where(
        or(
          and(eq(secrets.scope, "project"), eq(secrets.projectId, projectId)),
          and(eq(secrets.scope, "organization"), eq(secrets.organizationId, organizationId)),
        ),
      )
      .orderBy(desc(secrets.createdAt), desc(secrets.id));
    return rows.map((r) => this.view(r));
  }

  /** Every secret that can apply to a project's agents: the project's, its organization's and its partner's. */
  rowsForGateway(projectId: string, organizationId: string, partnerId: string | null): Promise<SecretRow[]> {
    const { secrets } = this.t;
    const scopes = [
      and(eq(secrets.scope, "project"), eq(secrets.projectId, projectId)),
      and(eq(secrets.scope, "organization"), eq(secrets.organizationId, organizationId)),
    ];
    if (partnerId) scopes.push(and(eq(secrets.scope, "partner"), eq(secrets.partnerId, partnerId)));
    return this.db.select().from(secrets).where(or(...scopes));
  }

  /** A secret readable from a project: its own or one of its organization's. */
  async getForProject(projectId: string, organizationId: string, id: string): Promise<Secret> {
    const { secrets } = this.t;
    const [row] = await this.db.select().from(secrets).where(eq(secrets.id, id)).limit(1);
    const visible =
      row && ((row.scope === "project" && row.projectId === projectId) || (row.scope === "organization" && row.organizationId === organizationId));
    if (!visible) throw notFound(SECRET_NOT_FOUND);
    return this.view(row);
  }

  async find(owner: SecretOwner, id: string): Promise<SecretRow> {
    const { secrets } = this.t;
    const [row] = await this.db.select().from(secrets).where(and(eq(secrets.id, id), this.ownerFilter(owner))).limit(1);
    if (!row) throw notFound(SECRET_NOT_FOUND);
    return row;
  }

  private checkVault(owner: SecretOwner): void {
    if (owner.scope !== "project") throw badRequest(VAULT_SCOPE_MESSAGE);
    if (!this.deps.config.opConnectHost) throw badRequest(VAULT_UNCONFIGURED_MESSAGE);
  }

  /**
   * A store reference's checks that need the instance or the secret (flat 400s, docs/injection.md#secret-stores):
   * its store is configured here; a `vault-db://` lease gives a user and a password, so only a database secret
   * takes one. Secret stores serve project and organization secrets alike (partners are refused by the route).
   */
  #checkStoreRef(ref: string, cfg: InjectionConfigShape | null): string {
    const parsed = parseStoreRef(ref.trim());
    if (typeof parsed === "string") throw ApiError.flat(400, parsed);
    const message = this.stores?.unavailable(parsed) ?? null;
    if (message !== null) throw ApiError.flat(400, message);
    if (parsed.kind === "vault-db" && cfg?.database === undefined) throw ApiError.flat(400, VAULT_DB_DATABASE_ONLY_MESSAGE);
    return ref.trim();
  }

  /**
   * The value-placement checks: a value spliced into a path or a header must not break it. A header value
   * (LLM values after normalisation, and the Codex account id, go into headers too) is a flat 400 naming `value`.
   */
  private checkValuePlacement(type: SecretType, value: string, cfg: InjectionConfigShape | null, accountId?: string): void {
    if (type === "generic" && cfg?.githubApp !== undefined) {
      if (!isGithubAppKey(value)) throw ApiError.flat(400, GITHUB_APP_KEY_MESSAGE);
    } else if (type === "generic" && cfg?.ssh !== undefined) {
      if (!parseSshPrivateKey(value)) throw ApiError.flat(400, SSH_KEY_MESSAGE);
    } else if (type === "generic" && cfg?.gcpServiceAccount !== undefined) {
      if (parseGcpKey(value) === null) throw ApiError.flat(400, GCP_KEY_MESSAGE);
    } else if (type === "generic" && cfg?.azureClientSecret !== undefined) {
      // A client secret goes into a form body, never a header: any characters.
    } else if (type === "generic" && injectsIntoPath(cfg)) {
      if (!isPathSafeValue(value)) throw badRequest(PATH_VALUE_MESSAGE);
    } else if (injectsIntoHeader(type, cfg) && !(isHeaderSafeValue(value) && isHeaderSafeValue(accountId ?? ""))) {
      throw ApiError.flat(400, HEADER_VALUE_MESSAGE);
    }
  }

  /**
   * The secrets that can apply to a request together with one of `owner`'s (docs/injection.md#placeholders):
   * a project's own, its organization's and its partner's; an organization's, its projects' and its partner's;
   * a partner's, and those of every organization it manages and of their projects.
   */
  #appliesTogether(owner: SecretOwner): Promise<SQL> | SQL {
    const { secrets, organizations } = this.t;
    const partnerOf = async (organizationId: string): Promise<SQL[]> => {
      const [org] = await this.db.select({ partnerId: organizations.partnerId }).from(organizations).where(eq(organizations.id, organizationId)).limit(1);
      return org?.partnerId ? [and(eq(secrets.scope, "partner"), eq(secrets.partnerId, org.partnerId))!] : [];
    };
    switch (owner.scope) {
      case "project":
        return partnerOf(owner.organizationId).then(
          (partner) =>
            or(and(eq(secrets.scope, "project"), eq(secrets.projectId, owner.projectId)), and(eq(secrets.scope, "organization"), eq(secrets.organizationId, owner.organizationId)), ...partner)!,
        );
      case "organization":
        return partnerOf(owner.organizationId).then((partner) => or(eq(secrets.organizationId, owner.organizationId), ...partner)!);
      case "partner": {
        const managed = this.db.select({ id: organizations.id }).from(organizations).where(eq(organizations.partnerId, owner.partnerId));
        return or(and(eq(secrets.scope, "partner"), eq(secrets.partnerId, owner.partnerId)), inArray(secrets.organizationId, managed))!;
      }
    }
  }

  /** A placeholder must not be, contain or be contained in one of a secret that can apply together with it. */
  async #checkPlaceholder(owner: SecretOwner, cfg: InjectionConfigShape, exceptId: string | null): Promise<void> {
    const placeholder = cfg.placeholder;
    if (placeholder === undefined) return;
    const { secrets } = this.t;
    const together = await this.#appliesTogether(owner);
    const rows = await this.db
      .select({ name: secrets.name, injectionConfig: secrets.injectionConfig })
      .from(secrets)
      .where(and(together, eq(secrets.type, "generic"), exceptId === null ? undefined : ne(secrets.id, exceptId)))
      .orderBy(secrets.createdAt, secrets.id);
    const taken = rows.find((r) => r.injectionConfig?.placeholder !== undefined && placeholdersClash(r.injectionConfig.placeholder, placeholder));
    if (taken) throw ApiError.flat(400, placeholderTakenMessage(taken.name));
  }

  /** A database secret's checks that need its host too (flat 400s) and its owner (docs/databases.md#the-database-secret). */
  #checkDatabase(owner: SecretOwner, hostPattern: string, cfg: InjectionConfigShape | null): void {
    // An SSH key is served to a project's agents too; a partner's would reach every customer's (docs/ssh.md#the-ssh-secret).
    if (cfg?.ssh !== undefined && owner.scope === "partner") throw badRequest(SSH_PARTNER_MESSAGE);
    if (cfg?.database === undefined) return;
    const message = databaseHostError(hostPattern, cfg.database);
    if (message) throw ApiError.flat(400, message);
    // The broker serves a project's agents their project's and organization's databases; a partner's would reach every customer's.
    if (owner.scope === "partner") throw badRequest(DATABASE_PARTNER_MESSAGE);
  }

  async create(owner: SecretOwner, input: CreateSecretInput): Promise<SecretCreated> {
    // Field rules (flat 400) that need the store or another field: before the service checks.
    if (input.type === "generic" && input.injectionConfig) await this.#checkPlaceholder(owner, input.injectionConfig, null);
    if (input.type === "generic" && input.injectionConfig) this.#checkDatabase(owner, input.hostPattern ?? "", input.injectionConfig);
    const valueSource = input.valueSource ?? "inline";
    if (valueSource === "external_vault") this.checkVault(owner);
    if (valueSource === "vault" && input.storeRef === undefined) throw ApiError.flat(400, STORE_REF_REQUIRED_MESSAGE);
    const storeRef = valueSource === "vault" ? this.#checkStoreRef(input.storeRef!, input.type === "generic" ? (input.injectionConfig ?? null) : null) : null;

    let value = valueSource === "inline" ? input.value! : null;
    let metadata: SecretMetadata | null = null;
    let injectionConfig: InjectionConfig | null = null;
    let hostPattern = blankToNull(input.hostPattern);
    if (input.type === "generic") {
      if (!input.injectionConfig) throw badRequest(INJECTION_REQUIRED_MESSAGE);
      injectionConfig = normalizeInjectionConfig(input.injectionConfig);
      if (injectionConfig.gcpServiceAccount !== undefined) hostPattern ??= GCP_DEFAULT_HOST;
    } else {
      const llm = normalizeLlmValue(input.type, value, input.metadata?.authMode);
      value = llm.value;
      const accountId = llm.accountId ?? (input.type === "llm_b" && llm.authMode === "oauth" ? input.metadata?.accountId : undefined);
      metadata = { authMode: llm.authMode, ...(accountId ? { accountId } : {}) };
      hostPattern ??= defaultLlmHost(input.type, llm.authMode);
    }
    if (value !== null) this.checkValuePlacement(input.type, value, injectionConfig, metadata?.accountId);
    if (valueSource === "external_vault" && input.opDisplay) metadata = { ...metadata, opDisplay: input.opDisplay };

    const now = creationTime();
    const row: SecretRow = {
      id: newId(),
      scope: owner.scope,
      organizationId: owner.scope === "partner" ? null : owner.organizationId,
      projectId: owner.scope === "project" ? owner.projectId : null,
      partnerId: owner.scope === "partner" ? owner.partnerId : null,
      name: input.name,
      type: input.type,
      valueSource,
      valueSealed: value === null ? null : this.deps.sealer.seal(value),
      opRef: valueSource === "external_vault" ? input.opRef!.trim() : null,
      storeRef,
      hostPattern: hostPattern!,
      pathPattern: blankToNull(input.pathPattern),
      injectionConfig,
      metadata,
      createdAt: now,
      updatedAt: now,
    };
    await this.deps.store.transaction(async () => {
      await this.db.insert(this.t.secrets).values(row);
      await this.#audit(row, null, row);
    });
    this.deps.events.emit({ kind: "secret", scope: owner.scope, id: row.id });
    const created: SecretCreated = {
      id: row.id,
      name: row.name,
      type: row.type,
      valueSource: row.valueSource,
      opRef: row.opRef,
      storeRef: row.storeRef,
      hostPattern: row.hostPattern,
      pathPattern: row.pathPattern,
      createdAt: row.createdAt,
    };
    if (value !== null) created.preview = previewOf(value);
    return created;
  }

  async update(owner: SecretOwner, id: string, input: UpdateSecretInput): Promise<void> {
    const row = await this.find(owner, id);
    let newInjection: InjectionConfig | null = null;
    if (row.type === "generic" && input.injectionConfig !== undefined) {
      const parsed = parseInjectionConfig(input.injectionConfig);
      if (!parsed.ok) throw ApiError.flat(400, parsed.message);
      newInjection = normalizeInjectionConfig(parsed.value);
      await this.#checkPlaceholder(owner, newInjection, row.id);
    }
    if (row.type === "generic" && (newInjection !== null || input.hostPattern !== undefined)) {
      this.#checkDatabase(owner, input.hostPattern ?? row.hostPattern, newInjection ?? row.injectionConfig);
    }
    const patch: Partial<SecretRow> = {};
    if (input.name !== undefined) patch.name = input.name;

    // The value's source after this write (docs/injection.md#changing-the-source): a new value makes it inline, a
    // new storeRef alone makes it a store secret, else an explicit valueSource decides.
    let valueSource = row.valueSource;
    if (input.value !== undefined) valueSource = "inline";
    else if (input.valueSource !== undefined) valueSource = input.valueSource;
    else if (input.storeRef !== undefined) valueSource = "vault";

    if (valueSource === "external_vault" && (row.valueSource !== "external_vault" || input.opRef !== undefined)) {
      this.checkVault(owner);
      const opRef = input.opRef ?? row.opRef;
      if (!opRef) throw ApiError.flat(400, "opRef is required when valueSource is external_vault");
      Object.assign(patch, { valueSource, opRef: opRef.trim(), storeRef: null, valueSealed: null });
      if (row.type !== "generic") patch.metadata = { ...row.metadata, authMode: row.metadata?.authMode ?? "api-key" };
    }
    if (valueSource === "vault" && (row.valueSource !== "vault" || input.storeRef !== undefined || newInjection !== null)) {
      const storeRef = input.storeRef ?? row.storeRef;
      if (!storeRef) throw ApiError.flat(400, STORE_REF_REQUIRED_MESSAGE);
      const checked = this.#checkStoreRef(storeRef, row.type === "generic" ? (newInjection ?? row.injectionConfig) : null);
      if (row.valueSource !== "vault" || checked !== row.storeRef) Object.assign(patch, { valueSource, storeRef: checked, opRef: null, valueSealed: null });
      if (row.type !== "generic" && row.valueSource !== "vault") {
        const { opDisplay: _dropped, ...kept } = row.metadata ?? {};
        patch.metadata = { ...kept, authMode: row.metadata?.authMode ?? "api-key" };
      }
    }
    if (input.opDisplay !== undefined && valueSource === "external_vault") {
      patch.metadata = { ...(patch.metadata ?? row.metadata), opDisplay: input.opDisplay };
    }

    const injectionConfig = newInjection ?? row.injectionConfig;
    if (newInjection) patch.injectionConfig = newInjection;

    let newValue: string | null = null;
    if (input.value !== undefined) {
      newValue = input.value;
      if (row.type !== "generic") {
        const llm = normalizeLlmValue(row.type, newValue, undefined);
        newValue = llm.value;
        patch.metadata = { authMode: llm.authMode, ...(llm.accountId ? { accountId: llm.accountId } : {}) };
      }
      Object.assign(patch, { valueSource: "inline", opRef: null, storeRef: null, valueSealed: this.deps.sealer.seal(newValue!) });
    } else if (valueSource === "inline" && row.valueSource !== "inline") {
      throw ApiError.flat(400, "value is required");
    }
    const effectiveValue = newValue ?? (valueSource === "inline" && row.valueSealed ? this.deps.sealer.open(row.valueSealed) : null);
    if (effectiveValue !== null && (newValue !== null || patch.injectionConfig !== undefined)) {
      this.checkValuePlacement(row.type, effectiveValue, injectionConfig, (patch.metadata ?? row.metadata)?.accountId);
    }

    if (input.hostPattern !== undefined) patch.hostPattern = input.hostPattern.trim();
    // The route lets a vendor-served wildcard through; only a cloud identity may hold one (docs/cloud-identities.md#variants).
    if (coversVendorSuffix(patch.hostPattern ?? row.hostPattern) && !isCloudIdentity(injectionConfig)) throw ApiError.flat(400, HOST_MESSAGES.publicSuffix);
    if (input.pathPattern !== undefined) patch.pathPattern = blankToNull(input.pathPattern);

    if (Object.keys(patch).length === 0) throw badRequest(NO_FIELDS_MESSAGE);
    patch.updatedAt = nowIso();
    await this.deps.store.transaction(async () => {
      await this.db.update(this.t.secrets).set(patch).where(eq(this.t.secrets.id, id));
      await this.#audit(row, row, { ...row, ...patch });
    });
    this.deps.events.emit({ kind: "secret", scope: owner.scope, id });
  }

  async delete(owner: SecretOwner, id: string): Promise<void> {
    const row = await this.find(owner, id);
    await this.deps.store.transaction(async () => {
      await this.db.delete(this.t.secrets).where(eq(this.t.secrets.id, id));
      await this.#audit(row, row, null);
    });
    this.deps.events.emit({ kind: "secret", scope: owner.scope, id });
  }

  /** The secret's change in the current write's audit event (docs/operations.md#audit-log); its value reads "<redacted>". */
  #audit(secret: SecretRow, before: object | null, after: object | null): Promise<void> {
    return this.deps.audit.record({ targetType: "secret", targetId: secret.id, projectId: secret.projectId, before, after });
  }

  /** The plaintext of an inline secret, for the gateway snapshot and migration export only. */
  openValue(row: SecretRow): string | null {
    return row.valueSealed === null ? null : this.deps.sealer.open(row.valueSealed);
  }
}
