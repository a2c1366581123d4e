// The data dir the operator named: created 0700 when missing; otherwise used as it is, or refused with one line
// saying what is wrong and what to do (a file given as the dir, a dir this user cannot write, one that belongs to
// another user as a Docker bind mount often does). Checked before anything is read or written in it.
import { accessSync, chmodSync, constants, existsSync, mkdirSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { MASTER_KEY_FILE } from "../crypto/masterKey.ts";
import { INSTANCE_ID_FILE } from "./instanceId.ts";
import { AUDIT_CHECKPOINT_FILE } from "./auditCheckpointFile.ts";
import { DB_FILE } from "../store/open.ts";

export class DataDirError extends Error {}

/** The files credgate keeps in the data dir (the CA's in crypto/ca.ts); each must be readable and writable. */
const OWN_FILES = [MASTER_KEY_FILE, DB_FILE, `${DB_FILE}-wal`, `${DB_FILE}-shm`, INSTANCE_ID_FILE, AUDIT_CHECKPOINT_FILE, "ca.pem", "ca.key"];

const uid = (): number | null => process.getuid?.() ?? null;

function code(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | null)?.code;
}

function can(path: string, mode: number): boolean {
  try {
    accessSync(path, mode);
    return true;
  } catch {
    return false;
  }
}

/** The nearest existing ancestor of `path` (the directory a missing data dir would be created in). */
function existingAncestor(path: string): string {
  let p = dirname(path);
  while (!existsSync(p) && dirname(p) !== p) p = dirname(p);
  return p;
}

/** The first component of `path` that exists and is not a directory, if any. */
function fileOnPath(path: string): string | null {
  let p = path;
  for (;;) {
    try {
      if (!statSync(p).isDirectory()) return p;
    } catch {}
    if (dirname(p) === p) return null;
    p = dirname(p);
  }
}

/** Why this user cannot use `path` (owned by someone else, or its mode), and the fix, as the tail of a message. */
function accessAdvice(path: string, dir: string): string {
  const me = uid();
  const st = statSync(path);
  if (me !== null && st.uid !== me) {
    return `it belongs to uid ${st.uid} and credgate runs as uid ${me}: give the data dir to this user (chown -R ${me} ${dir}) or run credgate as uid ${st.uid}`;
  }
  return `its mode is ${(st.mode & 0o777).toString(8).padStart(4, "0")}: make it readable and writable by its owner (chmod -R u+rwX ${dir})`;
}

/** For `serve`: the data dir exists (created 0700 if missing), is a directory, and this user can read and write it. */
export function prepareDataDir(dir: string): void {
  let isDir: boolean;
  try {
    isDir = statSync(dir).isDirectory();
  } catch (err) {
    if (code(err) === "EACCES") {
      throw new DataDirError(`data dir ${dir} cannot be reached: uid ${uid() ?? "?"} may not enter ${existingAncestor(dir)}; pass --data-dir with a path this user can use`);
    }
    if (code(err) !== "ENOENT") throw unusable(dir, err);
    create(dir);
    return;
  }
  if (!isDir) throw new DataDirError(`data dir ${dir} is a file, not a directory: pass --data-dir (or CREDGATE_DATA_DIR) with a directory path`);
  if (!can(dir, constants.R_OK | constants.W_OK | constants.X_OK)) {
    if (readOnlyFileSystem(dir)) throw new DataDirError(`data dir ${dir} is on a read-only file system: mount it read-write or pass --data-dir with a writable directory`);
    throw new DataDirError(`data dir ${dir} is not writable: ${accessAdvice(dir, dir)}`);
  }
  for (const name of OWN_FILES) {
    const file = join(dir, name);
    if (existsSync(file) && !can(file, constants.R_OK | constants.W_OK)) throw new DataDirError(`${file} cannot be read and written: ${accessAdvice(file, dir)}`);
  }
}

/** For commands that only read (`keys`, `run`): true when the data dir holds a database, never creating anything. */
export function dataDirHolds(dir: string, file: string): boolean {
  const path = join(dir, file);
  if (!existsSync(path)) return false;
  if (!can(dir, constants.R_OK | constants.X_OK) || !can(path, constants.R_OK)) throw new DataDirError(`${path} cannot be read: ${accessAdvice(path, dir)}`);
  return true;
}

/** Tightens a data dir this user owns to 0700 (it holds the master key); one owned by someone else is left as it is. */
export function restrictDataDir(dir: string): void {
  const st = statSync(dir);
  const me = uid();
  if ((me === null || st.uid === me) && (st.mode & 0o077) !== 0) chmodSync(dir, 0o700);
}

function create(dir: string): void {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (err) {
    if (code(err) === "EEXIST" && statSync(dir).isDirectory()) return;
    throw unusable(dir, err);
  }
}

function readOnlyFileSystem(dir: string): boolean {
  try {
    accessSync(dir, constants.W_OK);
    return false;
  } catch (err) {
    return code(err) === "EROFS";
  }
}

/** One line for a data dir that cannot even be looked at or created. */
function unusable(dir: string, err: unknown): DataDirError {
  switch (code(err)) {
    case "ENOTDIR":
    case "EEXIST":
      return new DataDirError(`data dir ${dir} cannot be created: ${fileOnPath(dir) ?? dirname(dir)} is a file, not a directory; pass --data-dir with a directory path`);
    case "EACCES":
    case "EPERM": {
      const parent = existingAncestor(dir);
      return new DataDirError(
        `data dir ${dir} cannot be created: uid ${uid() ?? "?"} may not write ${parent}; create the directory and give it to this user, or pass --data-dir with a writable path`,
      );
    }
    case "EROFS":
      return new DataDirError(`data dir ${dir} cannot be created: ${existingAncestor(dir)} is on a read-only file system; pass --data-dir with a writable path`);
    default:
      return new DataDirError(`data dir ${dir} cannot be used: ${(err as Error).message}`);
  }
}
