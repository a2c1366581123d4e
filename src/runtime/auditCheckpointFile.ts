// The copy of the audit checkpoint kept beside the SQLite database, in `<data dir>/audit-checkpoint`
// (docs/operations.md#the-checkpoint): the database's own copy travels with the file, so only a copy outside it
// shows that an older database file was put back. Written after each commit, replaced atomically (a new file
// renamed over the old one), mode 0600. Not a secret: it holds a MAC, not the key.
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";

export const AUDIT_CHECKPOINT_FILE = "audit-checkpoint";

export function auditCheckpointPath(dataDir: string): string {
  return join(dataDir, AUDIT_CHECKPOINT_FILE);
}

/** The file's text, or null when there is none. */
export function readCheckpointFile(path: string): string | null {
  try {
    return readFileSync(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw err;
  }
}

/** Replaces the file with `text` (a partial write never replaces a whole one). */
export function writeCheckpointFile(path: string, text: string): void {
  const partial = join(dirname(path), `.${basename(path)}.${process.pid}.${Math.random().toString(36).slice(2)}`);
  try {
    writeFileSync(partial, text + "\n", { mode: 0o600 });
    const fd = openSync(partial, "r");
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(partial, path);
  } catch (err) {
    rmSync(partial, { force: true });
    throw err;
  }
}

export function removeCheckpointFile(path: string): void {
  rmSync(path, { force: true });
}
