// The checkpoints that anchor the audit chain (docs/operations.md#the-checkpoint): each append moves a checkpoint
// of the head, MACed under a key derived from the master key, in the same transaction (and, with SQLite, into the
// data dir's copy once committed). An append that finds the checkpoint not matching the head (rows cut or
// rewritten meanwhile) leaves it where it was, so the evidence stays until someone looks.
import { formatCheckpoint, judgeChain, readCheckpoint, type ChainCheck, type ChainWalk, type Checkpoint } from "../core/auditCheckpoint.ts";
import { eq } from "drizzle-orm";
import { log } from "../observability/log.ts";
import type { Sealer } from "../crypto/seal.ts";
import { auditCheckpointPath, readCheckpointFile, writeCheckpointFile } from "../runtime/auditCheckpointFile.ts";
import type { Store } from "../store/store.ts";
import { CHAIN_LOCK, chainHashAt, chainHead } from "./auditChain.ts";

/** What anchors the chain: the MAC key (derived from the master key) and, with SQLite, the data dir's copy. */
export interface AuditAnchor {
  key: Buffer;
  /** `<data dir>/audit-checkpoint` with SQLite; null with PostgreSQL (the instances share no directory). */
  file: string | null;
}

/** The purpose the checkpoint's MAC key is derived for (Sealer.deriveKey). */
export const CHECKPOINT_KEY_PURPOSE = "audit-checkpoint";
/** The `settings` row holding the database's checkpoint. */
export const CHECKPOINT_SETTING = "audit_checkpoint";

/** The anchor of the store `where` names, under the master key `sealer` holds. */
export function auditAnchorOf(sealer: Sealer, where: { dataDir: string; databaseUrl: string | null }): AuditAnchor {
  return { key: sealer.deriveKey(CHECKPOINT_KEY_PURPOSE), file: where.databaseUrl ? null : auditCheckpointPath(where.dataDir) };
}

/** Which checkpoints may move on from the head an append found. */
export interface Anchored {
  stored: boolean;
  file: boolean;
}

export class AuditCheckpoints {
  #warned = false;
  /** The `seq` of the newest checkpoint this process has scheduled for the data dir's file. */
  #fileScheduled = 0;

  constructor(
    private readonly store: Store,
    private anchor: AuditAnchor,
  ) {}

  /** The database's checkpoint text, or null when the row is absent. */
  async #storedText(): Promise<string | null> {
    const { settings } = this.store.t;
    const [row] = await this.store.db.select({ value: settings.value }).from(settings).where(eq(settings.key, CHECKPOINT_SETTING)).limit(1);
    return row?.value ?? null;
  }

  async #storeCheckpoint(cp: Checkpoint): Promise<void> {
    const { settings } = this.store.t;
    const value = formatCheckpoint(this.anchor.key, cp);
    await this.store.db.insert(settings).values({ key: CHECKPOINT_SETTING, value }).onConflictDoUpdate({ target: settings.key, set: { value } });
  }

  /**
   * Whether the checkpoints may move on from `head`: the database's when it names exactly that head; the data
   * dir's copy when it is absent, or names that head or an event before it on the same chain (it is written
   * after each commit, so it may lag). One that names anything else is evidence, and stays.
   */
  async anchoredAt(head: Checkpoint): Promise<Anchored> {
    const stored = readCheckpoint(this.anchor.key, await this.#storedText());
    const atHead = stored !== null && stored.seq === head.seq && stored.hash === head.hash;
    if (this.anchor.file === null) return { stored: atHead, file: false };
    const text = readCheckpointFile(this.anchor.file);
    if (text === null) return { stored: atHead, file: atHead };
    const beside = readCheckpoint(this.anchor.key, text);
    return { stored: atHead, file: atHead && beside !== null && (await this.#onChain(beside, head)) };
  }

  /** Moves the checkpoints `anchored` allows to the new head `next`; runs inside the append's transaction. */
  async advance(next: Checkpoint, anchored: Anchored): Promise<void> {
    if (anchored.stored) await this.#storeCheckpoint(next);
    else this.#warnNotAnchored();
    if (anchored.file) this.#writeFileAfterCommit(next);
  }

  /** Whether `cp` names the head or an event before it with that event's hash. */
  async #onChain(cp: Checkpoint, head: Checkpoint): Promise<boolean> {
    if (cp.seq === head.seq) return cp.hash === head.hash;
    return cp.seq < head.seq && (await chainHashAt(this.store, cp.seq)) === cp.hash;
  }

  #writeFileAfterCommit(cp: Checkpoint): void {
    const file = this.anchor.file;
    if (file === null) return;
    const text = formatCheckpoint(this.anchor.key, cp);
    this.#fileScheduled = cp.seq;
    this.store.afterCommit(() => {
      // A transaction that appended many events writes the file once, for its last one.
      if (cp.seq < this.#fileScheduled) return;
      try {
        // Another process on the same file may have committed and written a later head meanwhile.
        const current = readCheckpoint(this.anchor.key, readCheckpointFile(file));
        if (current === null || current.seq < cp.seq) writeCheckpointFile(file, text);
      } catch (err) {
        log.error("audit checkpoint file not written", { file, error: (err as Error).message });
      }
    });
  }

  #warnNotAnchored(): void {
    if (this.#warned) return;
    this.#warned = true;
    log.error("audit chain checkpoint does not match the newest event: it is left as it was; run credgate audit verify");
  }

  /**
   * At start, before any write: a store that has never had a checkpoint (new, or kept by an older credgate) gets
   * one for its current head; the data dir's copy is written when it is missing or behind. A checkpoint row that
   * is there but wrong is left alone, and so is a store without one whose data dir still holds a valid copy
   * (the row was removed): both are for `credgate audit verify` to report.
   */
  async anchorAtStart(): Promise<void> {
    await this.store.transaction(async () => {
      await this.store.lockKey(CHAIN_LOCK);
      const head = await chainHead(this.store);
      const text = await this.#storedText();
      if (text === null) {
        const copy = this.anchor.file === null ? null : readCheckpoint(this.anchor.key, readCheckpointFile(this.anchor.file));
        if (copy !== null) {
          log.error("the audit chain's checkpoint row is missing from the database although the data dir holds one: not replaced; run credgate audit verify");
          return;
        }
        if (head.seq > 0) log.warn("the audit chain had no checkpoint: anchored at its newest event", { seq: head.seq });
        await this.#storeCheckpoint(head);
        this.#writeFileAfterCommit(head);
        return;
      }
      const anchored = await this.anchoredAt(head);
      if (anchored.file) this.#writeFileAfterCommit(head);
    });
  }

  /**
   * The rotation of the master key (cli/rotateMasterKey.ts), inside its transaction: once the rotation's own event
   * has moved the checkpoint, it is MACed again under the new key. One that did not match stays unreadable.
   */
  async rekey(newKey: Buffer): Promise<void> {
    await this.store.beforeCommit(async () => {
      await this.store.lockKey(CHAIN_LOCK);
      const stored = readCheckpoint(this.anchor.key, await this.#storedText());
      const head = await chainHead(this.store);
      const old = this.anchor;
      this.anchor = { ...old, key: newKey };
      if (stored === null || stored.seq !== head.seq || stored.hash !== head.hash) return;
      await this.#storeCheckpoint(head);
      if (old.file !== null) {
        const file = old.file;
        const text = formatCheckpoint(newKey, head);
        // Never thrown after the commit: the rotation has happened, and its caller must go on to keep the new key.
        this.store.afterCommit(() => {
          try {
            writeCheckpointFile(file, text);
          } catch (err) {
            log.error("audit checkpoint file not written", { file, error: (err as Error).message });
          }
        });
      }
    });
  }

  /** The verdict on a walked chain: a broken link stands; a linked one's head is held against the checkpoints. */
  async judge(walk: ChainWalk): Promise<ChainCheck> {
    if (walk.kind === "broken") return { intact: false, events: walk.events, brokenAt: walk.brokenAt };
    const stored = readCheckpoint(this.anchor.key, await this.#storedText());
    if (this.anchor.file === null) return judgeChain(walk, stored);
    const beside = readCheckpoint(this.anchor.key, readCheckpointFile(this.anchor.file));
    return judgeChain(walk, stored, beside, beside !== null && (await this.#onChain(beside, walk.head)));
  }
}
