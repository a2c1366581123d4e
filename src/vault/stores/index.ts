// The registry of secret stores (docs/injection.md#secret-stores): which store serves which storeRef scheme.
// Each store module adds ONE line to FACTORIES; a factory answers null when its settings are absent.
import type { StoreKind } from "../../core/storeRefs.ts";
import { commandStoreFrom } from "./command.ts";
import type { SecretStore, StoreContext, StoreFactory } from "./types.ts";

const FACTORIES: Partial<Record<StoreKind, StoreFactory>> = {
  cmd: commandStoreFrom,
};

/** The configured stores, by scheme: a scheme missing here is "not configured". */
export function storesFrom(ctx: StoreContext): Map<StoreKind, SecretStore> {
  const stores = new Map<StoreKind, SecretStore>();
  const built = new Map<StoreFactory, SecretStore | null>();
  for (const [kind, factory] of Object.entries(FACTORIES) as [StoreKind, StoreFactory][]) {
    // One instance per factory: vault:// and vault-db:// share one login.
    if (!built.has(factory)) built.set(factory, factory(ctx));
    const store = built.get(factory);
    if (store) stores.set(kind, store);
  }
  return stores;
}
