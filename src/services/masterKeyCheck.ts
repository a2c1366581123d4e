// Proves the master key opens this store's data before anything else reads or writes it: a check value
// sealed under the key, kept in `settings` from the first start on, is opened at every start (one row, one
// AES-GCM open). A store from before the check is proved by opening one sealed API-key copy (the bootstrap
// always made one) and then gets the check value. A store with neither holds no data yet: only then may a new
// key be made.
import { eq } from "drizzle-orm";
import { Sealer } from "../crypto/seal.ts";
import type { Store } from "../store/open.ts";

const CHECK_KEY = "master_key_check";
const CHECK_TEXT = "credgate master key check";

export interface Unlock {
  /** The key the operator gave, or the data dir's; null when there is none. */
  key: Buffer | null;
  /** Makes a new key when the store holds no data; absent for commands that only read. */
  create?: () => Buffer;
  /** The error for a key that does not open the data (or no key where data exists). */
  mismatch: () => Error;
}

/** The sealer for the store's data; null when the store holds no data and no key may be made. */
export function unlockStore(store: Store, u: Unlock): Promise<Sealer | null> {
  // Writers take the startup lock: instances starting together on one empty database agree on one check value.
  return u.create ? store.exclusive(() => unlock(store, u)) : unlock(store, u);
}

async function unlock(store: Store, u: Unlock): Promise<Sealer | null> {
  const { settings, apiKeys } = store.t;
  const [check] = await store.db.select({ value: settings.value }).from(settings).where(eq(settings.key, CHECK_KEY)).limit(1);
  const proof = check?.value ?? (await store.db.select({ value: apiKeys.tokenSealed }).from(apiKeys).limit(1))[0]?.value;
  if (proof === undefined) {
    if (!u.create) return null;
    const sealer = new Sealer(u.key ?? u.create());
    await store.db.insert(settings).values({ key: CHECK_KEY, value: sealer.seal(CHECK_TEXT) });
    return sealer;
  }
  if (u.key === null) throw u.mismatch();
  const sealer = new Sealer(u.key);
  if (!opens(sealer, proof)) throw u.mismatch();
  if (!check && u.create) await store.db.insert(settings).values({ key: CHECK_KEY, value: sealer.seal(CHECK_TEXT) });
  return sealer;
}

function opens(sealer: Sealer, sealed: string): boolean {
  try {
    sealer.open(sealed);
    return true;
  } catch {
    return false;
  }
}
