// API keys (project, organization, partner): personal, at most one per (holder, project|organization),
// stored as SHA-256 hash + sealed copy so `GET /user/api-key` can show it again. Regeneration replaces the
// key in place; the old value stops working at once.
import { and, eq } from "drizzle-orm";
import { tokenHash } from "../crypto/hash.ts";
import { newId, nowIso } from "../core/ids.ts";
import type { ApiKeyRow } from "../store/rows.ts";
import { issueCredential } from "./credentials.ts";
import type { ServiceDeps } from "./deps.ts";

export type ApiKeyRecord = ApiKeyRow;

type Holder = { kind: "project"; userId: string; projectId: string; organizationId: string } | { kind: "organization"; userId: string; organizationId: string };

export class ApiKeyService {
  constructor(private readonly deps: ServiceDeps) {}

  private get db() {
    return this.deps.store.db;
  }

  private get t() {
    return this.deps.store.t;
  }

  async findByToken(token: string): Promise<ApiKeyRecord | undefined> {
    return this.findByHash(tokenHash(token));
  }

  /** The key whose current value has this hash (a regenerated key no longer matches its old hash). */
  async findByHash(hash: string): Promise<ApiKeyRecord | undefined> {
    const [row] = await this.db.select().from(this.t.apiKeys).where(eq(this.t.apiKeys.tokenHash, hash)).limit(1);
    return row;
  }

  private async find(holder: Holder): Promise<ApiKeyRecord | undefined> {
    const { apiKeys } = this.t;
    const scopeColumn = holder.kind === "project" ? eq(apiKeys.projectId, holder.projectId) : eq(apiKeys.organizationId, holder.organizationId);
    const [row] = await this.db
      .select()
      .from(apiKeys)
      .where(and(eq(apiKeys.kind, holder.kind), eq(apiKeys.userId, holder.userId), scopeColumn))
      .limit(1);
    return row;
  }

  /** The holder's key in plaintext, if it has one (never creates it). */
  async storedKey(holder: Holder): Promise<string | null> {
    const existing = await this.find(holder);
    return existing ? this.deps.sealer.open(existing.tokenSealed) : null;
  }

  /** The holder's key in plaintext, created if missing. `fixed` pins its value (bootstrap keys). */
  async keyFor(holder: Holder, fixed: string | null = null): Promise<string> {
    const existing = await this.find(holder);
    if (existing && (fixed === null || existing.tokenHash === tokenHash(fixed))) return this.deps.sealer.open(existing.tokenSealed);
    if (existing) return this.replace(existing, fixed);
    const cred = issueCredential(this.deps.sealer, holder.kind, fixed);
    const row: ApiKeyRow = {
      id: newId(),
      kind: holder.kind,
      tokenHash: cred.tokenHash,
      tokenSealed: cred.tokenSealed,
      userId: holder.userId,
      organizationId: holder.organizationId,
      projectId: holder.kind === "project" ? holder.projectId : null,
      partnerId: null,
      createdAt: nowIso(),
    };
    await this.deps.store.transaction(async () => {
      await this.db.insert(this.t.apiKeys).values(row);
      await this.#audit(row, null, row);
    });
    return cred.token;
  }

  /** A new value for the holder's key (created if missing); the previous value dies immediately. */
  async regenerate(holder: Holder): Promise<string> {
    const existing = await this.find(holder);
    return existing ? this.replace(existing, null) : this.keyFor(holder);
  }

  private async replace(existing: ApiKeyRecord, fixed: string | null): Promise<string> {
    const cred = issueCredential(this.deps.sealer, existing.kind, fixed);
    await this.deps.store.transaction(async () => {
      await this.db.update(this.t.apiKeys).set({ tokenHash: cred.tokenHash, tokenSealed: cred.tokenSealed }).where(eq(this.t.apiKeys.id, existing.id));
      await this.#audit(existing, { tokenHash: existing.tokenHash }, { tokenHash: cred.tokenHash });
    });
    return cred.token;
  }

  /** An API key's change in the current write's audit event (docs/operations.md#audit-log); the key reads "<redacted>". */
  #audit(key: ApiKeyRow, before: object | null, after: object | null): Promise<void> {
    return this.deps.audit.record({ targetType: "api_key", targetId: key.id, projectId: key.projectId, before, after });
  }
}
