// API keys (project, organization, partner): personal, at most one per (holder, project|organization),
// stored as SHA-256 hash + sealed copy so `GET /user/api-key` can show it again. Regeneration replaces the
// key in place; the old value stops working at once.
import { and, eq } from "drizzle-orm";
import { tokenHash } from "../crypto/hash.ts";
import { newId, nowIso } from "../core/ids.ts";
import { apiKeys, type ApiKeyKind } from "../store/schema.ts";
import { issueCredential } from "./credentials.ts";
import type { ServiceDeps } from "./deps.ts";

export type ApiKeyRecord = typeof apiKeys.$inferSelect;

type Holder = { kind: "project"; userId: string; projectId: string; organizationId: string } | { kind: "organization"; userId: string; organizationId: string };

export class ApiKeyService {
  constructor(private readonly deps: ServiceDeps) {}

  findByToken(token: string): ApiKeyRecord | undefined {
    return this.deps.db.select().from(apiKeys).where(eq(apiKeys.tokenHash, tokenHash(token))).get();
  }

  private find(holder: Holder): ApiKeyRecord | undefined {
    const scopeColumn = holder.kind === "project" ? eq(apiKeys.projectId, holder.projectId) : eq(apiKeys.organizationId, holder.organizationId);
    return this.deps.db
      .select()
      .from(apiKeys)
      .where(and(eq(apiKeys.kind, holder.kind), eq(apiKeys.userId, holder.userId), scopeColumn))
      .get();
  }

  /** The holder's key in plaintext, created if missing. `fixed` pins its value (bootstrap keys). */
  keyFor(holder: Holder, fixed: string | null = null): string {
    const existing = this.find(holder);
    if (existing && (fixed === null || existing.tokenHash === tokenHash(fixed))) return this.deps.sealer.open(existing.tokenSealed);
    if (existing) return this.replace(existing.id, fixed);
    const cred = issueCredential(this.deps.sealer, holder.kind, fixed);
    this.deps.db
      .insert(apiKeys)
      .values({
        id: newId(),
        kind: holder.kind as ApiKeyKind,
        tokenHash: cred.tokenHash,
        tokenSealed: cred.tokenSealed,
        userId: holder.userId,
        organizationId: holder.organizationId,
        projectId: holder.kind === "project" ? holder.projectId : null,
        partnerId: null,
        createdAt: nowIso(),
      })
      .run();
    return cred.token;
  }

  /** A new value for the holder's key (created if missing); the previous value dies immediately. */
  regenerate(holder: Holder): string {
    const existing = this.find(holder);
    return existing ? this.replace(existing.id, null) : this.keyFor(holder);
  }

  private replace(id: string, fixed: string | null): string {
    const kind = this.deps.db.select({ kind: apiKeys.kind }).from(apiKeys).where(eq(apiKeys.id, id)).get()!.kind;
    const cred = issueCredential(this.deps.sealer, kind, fixed);
    this.deps.db.update(apiKeys).set({ tokenHash: cred.tokenHash, tokenSealed: cred.tokenSealed }).where(eq(apiKeys.id, id)).run();
    return cred.token;
  }
}
