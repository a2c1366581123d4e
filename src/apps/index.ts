// The app catalog (docs/injection.md#app-connections): every provider, by id, in display order. Adding an app is adding one
// file under providers/ and one line here; nothing else in the code names a provider.
import type { AppDefinition } from "./types.ts";
import { cloudflare } from "./providers/cloudflare.ts";
import { datadog } from "./providers/datadog.ts";
import { dropbox } from "./providers/dropbox.ts";
import { github } from "./providers/github.ts";
import { gitlab } from "./providers/gitlab.ts";
import { gmail } from "./providers/gmail.ts";
import { googleCalendar } from "./providers/googleCalendar.ts";
import { googleDrive } from "./providers/googleDrive.ts";
import { jira } from "./providers/jira.ts";
import { linear } from "./providers/linear.ts";
import { notion } from "./providers/notion.ts";
import { resend } from "./providers/resend.ts";
import { slack } from "./providers/slack.ts";
import { vercel } from "./providers/vercel.ts";

export const APPS: readonly AppDefinition[] = [
  github, gitlab, gmail, googleCalendar, googleDrive, slack, notion, linear, jira, dropbox, resend, cloudflare, vercel, datadog,
];

const BY_ID = new Map(APPS.map((a) => [a.id, a]));

export function findApp(provider: string): AppDefinition | null {
  return BY_ID.get(provider) ?? null;
}

export type { AppDefinition } from "./types.ts";
