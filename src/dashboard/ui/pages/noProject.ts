// `/` for someone who belongs to no project (every project deleted, or removed from the organization):
// what they can do next instead of an empty page.
import { empty } from "../components.ts";
import { h } from "../h.ts";
import type { PageFn } from "../types.ts";

export const noProjectPage: PageFn = (ctx) => [
  h("h1", { tabindex: "-1" }, "No project"),
  empty(`You are not a member of any project. Ask an administrator of your organization to add you${ctx.mode === "cloud" ? ", or open a claim link you were given" : ""}.`),
];
