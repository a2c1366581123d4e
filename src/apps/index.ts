// The app catalog (CONTRACT §5.8): every provider, by id, in display order. Adding an app is adding one
// file under providers/ and one line here; nothing else in the code names a provider.
import type { AppDefinition } from "./types.ts";
import { github } from "./providers/github.ts";
import { resend } from "./providers/resend.ts";

export const APPS: readonly AppDefinition[] = [github, resend];

const BY_ID = new Map(APPS.map((a) => [a.id, a]));

export function findApp(provider: string): AppDefinition | null {
  return BY_ID.get(provider) ?? null;
}

export type { AppDefinition } from "./types.ts";
