// The system temp dir is shared with everything else on the machine: a test that opens or closes it (chmod of
// `dirname(tempDir())`, a chown) breaks other programs long after the run. The preload records its mode and
// owner before the tests and fails the run if they changed.
import { statSync } from "node:fs";
import { tmpdir } from "node:os";

export interface DirIdentity {
  path: string;
  mode: string;
  uid: number;
  gid: number;
}

export function identityOf(path: string): DirIdentity {
  const st = statSync(path);
  return { path, mode: (st.mode & 0o7777).toString(8).padStart(4, "0"), uid: st.uid, gid: st.gid };
}

/** Null when nothing changed, else the one message that fails the run. */
export function tmpChange(before: DirIdentity, after: DirIdentity): string | null {
  if (before.mode === after.mode && before.uid === after.uid && before.gid === after.gid) return null;
  return (
    `a test changed ${before.path}: mode ${before.mode} → ${after.mode}, owner ${before.uid}:${before.gid} → ${after.uid}:${after.gid}. ` +
    `Tests must only chmod or chown directories they created (make a parent dir of your own with tempDir()). ` +
    `Restore it with: chmod ${before.mode} ${before.path} && chown ${before.uid}:${before.gid} ${before.path}`
  );
}

/** Records the temp dir now; the returned check throws if it changed since. */
export function guardTempDir(): () => void {
  const before = identityOf(tmpdir());
  return () => {
    const change = tmpChange(before, identityOf(before.path));
    if (change) throw new Error(change);
  };
}
