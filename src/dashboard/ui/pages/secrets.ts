// Secrets of a project (`/secrets`, with the organization's inherited ones shown read-only) or of the
// organization (`/org/secrets`, admins). Values are write-only: the list shows where and how a secret is
// injected, and a create shows only the API's masked preview. `?create=<type>&host=<host>` (the gateway's
// guidance link) opens the create dialog prefilled, and closing it drops those parameters from the URL.
import { badge, button, confirmAction, empty, errorText, form, formatTime, notice, openDialog, table } from "../components.ts";
import { h, replace } from "../h.ts";
import type { PageCtx, PageFn } from "../types.ts";
import { describeInjection, secretBody, secretFields, type SecretRecord } from "./secretForm.ts";
import type { SecretCreated, SecretTestResult } from "../api-types.ts";

/** Signed and minted secrets are tried against their issuer; a store secret is read once (docs/injection.md#testing-a-store-reference). */
const testable = (s: SecretRecord) =>
  s.valueSource === "vault" || (s.valueSource === "inline" && s.injectionConfig !== null && ("awsSigV4" in s.injectionConfig || "githubApp" in s.injectionConfig));

/** Where the value lives, for the list's Source column. */
const sourceOf = (s: SecretRecord) =>
  s.valueSource === "external_vault" ? h("code", null, s.opRef ?? "") : s.valueSource === "vault" ? h("span", null, "Secret store ", h("code", null, s.storeRef ?? "")) : "Stored (encrypted)";

const BASES = { project: "/secrets", organization: "/org/secrets", partner: "/partner/secrets" };
const CAPTIONS = { project: "Secrets of this project", organization: "Secrets of the organization", partner: "Secrets of the partner" };

export function secretsView(ctx: PageCtx, scope: "project" | "organization" | "partner"): Promise<HTMLElement[]> {
  const base = BASES[scope];
  const status = h("div");
  const list = h("div");

  const load = async () => {
    const rows = await ctx.api.get<SecretRecord[]>(base);
    replace(
      list,
      rows.length === 0
        ? empty("No secrets yet. Add one so the gateway can inject it into your agents' requests — agents only ever see a placeholder.", " ", button("Add secret", () => openEditor(), { kind: "primary" }))
        : table(
            CAPTIONS[scope],
            ["Name", "Type", "Host", "Path", "Injection", "Source", "Created", "Actions"],
            rows.map((s) => {
              const own = s.scope === scope;
              return [
                h("span", null, s.name, own ? null : [" ", badge(s.scope)]),
                s.typeLabel,
                h("code", null, s.hostPattern),
                s.pathPattern ? h("code", null, s.pathPattern) : "—",
                describeInjection(s),
                sourceOf(s),
                formatTime(s.createdAt),
                own
                  ? h(
                      "div",
                      { class: "row-actions" },
                      button("Edit", () => openEditor(s), { label: `Edit ${s.name}` }),
                      testable(s) ? button("Test", () => test(s), { label: `Test ${s.name}` }) : null,
                      button("Delete", () => remove(s), { kind: "danger", label: `Delete ${s.name}` }),
                    )
                  : h("span", { class: "hint" }, "Managed by the organization"),
              ];
            }),
          ),
    );
  };

  // A signed or minted secret is tried against its issuer (AWS STS, GitHub): docs/injection.md#testing-a-signed-or-minted-secret;
  // a store secret is read once from its store.
  const test = async (s: SecretRecord) => {
    replace(status, notice("info", `Testing ${s.name}…`));
    try {
      const r = await ctx.api.send<SecretTestResult>("POST", `${base}/${s.id}/test`);
      replace(status, notice(r.ok ? "success" : "error", `${s.name}: ${r.message}`));
    } catch (err) {
      replace(status, notice("error", errorText(err)));
    }
  };

  const remove = async (s: SecretRecord) => {
    if (!(await confirmAction(`Delete ${s.name}?`, "Agents stop receiving this secret at once.", "Delete secret"))) return;
    try {
      await ctx.api.send("DELETE", `${base}/${s.id}`);
      replace(status, notice("success", `Deleted ${s.name}.`));
      await load();
    } catch (err) {
      replace(status, notice("error", errorText(err)));
    }
  };

  const openEditor = (existing?: SecretRecord, prefill?: { type?: string; host?: string }) => {
    openDialog(existing ? `Edit ${existing.name}` : "Add secret", (close) =>
      form({
        fields: secretFields({ existing, prefill, allowVault: scope === "project", allowStore: scope !== "partner" }),
        submitLabel: existing ? "Save changes" : "Add secret",
        onCancel: close,
        async onSubmit(v) {
          if (existing) {
            await ctx.api.send("PATCH", `${base}/${existing.id}`, secretBody(v, true));
            replace(status, notice("success", `Saved ${existing.name}.`));
          } else {
            const created = await ctx.api.send<SecretCreated>("POST", base, secretBody(v, false));
            replace(status, notice("success", `Added ${created.name}.`, created.preview ? [" Stored value: ", h("code", null, created.preview)] : null));
          }
          close();
          await load();
        },
      }),
    ).dialog.addEventListener("close", () => ctx.setQuery({ create: null, host: null }));
  };

  return load().then(() => {
    const create = ctx.query.get("create");
    if (create) queueMicrotask(() => openEditor(undefined, { type: create, host: ctx.query.get("host") ?? undefined }));
    return [status, h("div", { class: "toolbar" }, button("Add secret", () => openEditor(), { kind: "primary" })), list];
  });
}

export const secretsPage: PageFn = async (ctx) => [
  h("h1", { tabindex: "-1" }, "Secrets"),
  h("p", { class: "lead" }, "Credentials the gateway injects into matching requests. Organization secrets apply to every project; a project secret wins on the same header."),
  ...(await secretsView(ctx, "project")),
];
