// Shared pieces of every page: labelled form fields, dialogs, notices, tables, copy buttons. Every field has a
// <label>, every action is a <button>, and an API error is shown next to the field it names (or above the
// form's buttons) in an element with role="alert", so screen readers announce it.
import { ApiFailure } from "./api.ts";
import { h, replace, uid, type Child } from "./h.ts";

export interface FieldSpec {
  name: string;
  label: string;
  type?: "text" | "password" | "select" | "textarea" | "checkbox" | "number" | "email" | "datetime-local";
  value?: string | boolean;
  options?: [value: string, label: string][];
  /** A select of several choices: `values` are chosen at first, and the field's value is the chosen ones, one per line. */
  multiple?: boolean;
  values?: string[];
  hint?: string;
  placeholder?: string;
  required?: boolean;
  autocomplete?: string;
  /** API error messages about this field (shown under it instead of above the buttons). */
  match?: RegExp;
  /** Shown only when this returns true for the form's current values. */
  when?: (values: Record<string, string | boolean>) => boolean;
}

export interface Field {
  spec: FieldSpec;
  wrap: HTMLElement;
  input: HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement;
  setError(message: string | null): void;
  value(): string | boolean;
}

export function field(spec: FieldSpec): Field {
  const id = uid(spec.name);
  const hintId = `${id}-hint`;
  const errorId = `${id}-error`;
  let input: Field["input"];
  const common = { id, name: spec.name, required: spec.required, "aria-describedby": spec.hint ? hintId : null };
  if (spec.type === "select") {
    const chosen = (v: string) => (spec.multiple ? (spec.values ?? []).includes(v) : v === spec.value);
    input = h("select", { ...common, multiple: spec.multiple, size: spec.multiple ? Math.min(8, Math.max(3, spec.options?.length ?? 0)) : null }, ...(spec.options ?? []).map(([v, l]) => h("option", { value: v, selected: chosen(v) }, l)));
  } else if (spec.type === "textarea") {
    input = h("textarea", { ...common, rows: 4, placeholder: spec.placeholder, value: String(spec.value ?? "") });
  } else if (spec.type === "checkbox") {
    input = h("input", { ...common, type: "checkbox", checked: spec.value === true });
  } else {
    input = h("input", { ...common, type: spec.type ?? "text", value: String(spec.value ?? ""), placeholder: spec.placeholder, autocomplete: spec.autocomplete ?? "off", spellcheck: "false" });
  }
  const error = h("p", { id: errorId, class: "field-error", role: "alert", hidden: true });
  const label = h("label", { for: id }, spec.label);
  const wrap =
    spec.type === "checkbox"
      ? h("div", { class: "field field-check" }, input, label, spec.hint ? h("p", { id: hintId, class: "hint" }, spec.hint) : null, error)
      : h("div", { class: "field" }, label, input, spec.hint ? h("p", { id: hintId, class: "hint" }, spec.hint) : null, error);
  return {
    spec,
    wrap,
    input,
    setError(message) {
      error.textContent = message ?? "";
      error.hidden = !message;
      if (message) {
        input.setAttribute("aria-invalid", "true");
        input.setAttribute("aria-describedby", [spec.hint ? hintId : "", errorId].filter(Boolean).join(" "));
      } else {
        input.removeAttribute("aria-invalid");
        if (spec.hint) input.setAttribute("aria-describedby", hintId);
        else input.removeAttribute("aria-describedby");
      }
    },
    value: () =>
      input instanceof HTMLInputElement && input.type === "checkbox"
        ? input.checked
        : input instanceof HTMLSelectElement && input.multiple
          ? [...input.selectedOptions].map((o) => o.value).join("\n")
          : input.value,
  };
}

export function button(label: Child, onClick: (ev: MouseEvent) => void, opts: { kind?: "primary" | "danger" | "plain"; type?: "button" | "submit"; label?: string; disabled?: boolean } = {}): HTMLButtonElement {
  return h("button", { type: opts.type ?? "button", class: `btn ${opts.kind ?? "plain"}`, onclick: onClick, "aria-label": opts.label, disabled: opts.disabled }, label);
}

export function errorText(err: unknown): string {
  return err instanceof ApiFailure || err instanceof Error ? err.message : String(err);
}

export function notice(kind: "error" | "info" | "success", ...text: Child[]): HTMLElement {
  return h("div", { class: `notice ${kind}`, role: kind === "error" ? "alert" : "status" }, ...text);
}

export function loading(what = "Loading…"): HTMLElement {
  return h("p", { class: "loading", role: "status" }, what);
}

export function empty(...text: Child[]): HTMLElement {
  return h("div", { class: "empty" }, ...text);
}

export function table(caption: string, headers: string[], rows: Child[][]): HTMLElement {
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      null,
      h("caption", { class: "sr-only" }, caption),
      h("thead", null, h("tr", null, ...headers.map((x) => h("th", { scope: "col" }, x)))),
      h("tbody", null, ...rows.map((r) => h("tr", null, ...r.map((c) => h("td", null, c))))),
    ),
  );
}

export function badge(text: string, kind = ""): HTMLElement {
  return h("span", { class: `badge ${kind}` }, text);
}

export function copyButton(value: () => string, label: string): HTMLButtonElement {
  const b = button(label, async () => {
    try {
      await navigator.clipboard.writeText(value());
      b.textContent = "Copied";
    } catch {
      b.textContent = "Select and copy the text";
    }
    setTimeout(() => (b.textContent = label), 2000);
  });
  return b;
}

export function formatTime(iso: string | null | undefined): string {
  if (!iso) return "—";
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
}

/** A modal <dialog> (focus is trapped and Escape closes it, natively). */
export function openDialog(title: string, build: (close: () => void) => Child): { dialog: HTMLDialogElement; close: () => void } {
  const titleId = uid("dialog-title");
  const dialog = h("dialog", { "aria-labelledby": titleId, class: "dialog" });
  const close = () => {
    dialog.close();
  };
  dialog.addEventListener("close", () => dialog.remove());
  replace(dialog, h("div", { class: "dialog-head" }, h("h2", { id: titleId }, title), button("×", close, { label: "Close" })), build(close));
  document.body.appendChild(dialog);
  dialog.showModal();
  return { dialog, close };
}

export interface FormOptions {
  fields: FieldSpec[];
  submitLabel: string;
  /** Receives the visible fields' values; a thrown error is shown next to its field or above the buttons. */
  onSubmit(values: Record<string, string | boolean>): Promise<void>;
  onCancel?: () => void;
  extra?: Child;
}

/** A form of labelled fields; fields with `when` appear and disappear as the values change. */
export function form(opts: FormOptions): HTMLFormElement {
  const fields = opts.fields.map(field);
  const general = h("div", { class: "form-error", role: "alert", hidden: true });
  const submit = h("button", { type: "submit", class: "btn primary" }, opts.submitLabel);
  const values = () => Object.fromEntries(fields.map((f) => [f.spec.name, f.value()])) as Record<string, string | boolean>;
  const sync = () => {
    const v = values();
    for (const f of fields) f.wrap.hidden = f.spec.when ? !f.spec.when(v) : false;
  };
  const el = h(
    "form",
    { class: "form", novalidate: true },
    ...fields.map((f) => f.wrap),
    opts.extra,
    general,
    h("div", { class: "actions" }, submit, opts.onCancel ? button("Cancel", opts.onCancel) : null),
  );
  el.addEventListener("input", sync);
  el.addEventListener("change", sync);
  sync();
  el.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    for (const f of fields) f.setError(null);
    general.hidden = true;
    const v = values();
    const visible = Object.fromEntries(fields.filter((f) => !f.wrap.hidden).map((f) => [f.spec.name, v[f.spec.name]!]));
    const missing = fields.find((f) => !f.wrap.hidden && f.spec.required && String(f.value()).trim() === "");
    if (missing) {
      missing.setError(`${missing.spec.label} is required`);
      missing.input.focus();
      return;
    }
    submit.disabled = true;
    submit.setAttribute("aria-busy", "true");
    try {
      await opts.onSubmit(visible);
    } catch (err) {
      const message = errorText(err);
      const target = fields.find((f) => !f.wrap.hidden && f.spec.match?.test(message));
      if (target) {
        target.setError(message);
        target.input.focus();
      } else {
        general.textContent = message;
        general.hidden = false;
      }
    } finally {
      submit.disabled = false;
      submit.removeAttribute("aria-busy");
    }
  });
  return el;
}

/** Asks before a destructive action; resolves true when confirmed. */
export function confirmAction(title: string, text: string, confirmLabel: string): Promise<boolean> {
  return new Promise((resolve) => {
    let answered = false;
    const { dialog, close } = openDialog(title, (close) => [
      h("p", null, text),
      h(
        "div",
        { class: "actions" },
        button(confirmLabel, () => {
          answered = true;
          resolve(true);
          close();
        }, { kind: "danger" }),
        button("Cancel", close),
      ),
    ]);
    dialog.addEventListener("close", () => {
      if (!answered) resolve(false);
    });
    void close;
  });
}

/** Runs an action from a button, showing a failure in `where` (an element with role=alert). */
export async function attempt(where: HTMLElement, fn: () => Promise<void>): Promise<void> {
  replace(where);
  try {
    await fn();
  } catch (err) {
    replace(where, notice("error", errorText(err)));
  }
}

const labelled = (el: HTMLElement, label: string) => (el.setAttribute("aria-label", label), el);

/** Credentials the API returns only once (new keys, tokens, claim and invite links): each in a read-only field with a copy button. */
export function shownOnce(intro: string, values: [label: string, value: string][]): HTMLElement {
  return h(
    "div",
    { class: "shown-once" },
    notice("info", intro),
    ...values.map(([label, value]) => {
      const id = uid("once");
      return h("div", { class: "field" }, h("label", { for: id }, label), h("div", { class: "copy-row" }, h("input", { id, type: "text", readOnly: true, value, class: "mono" }), labelled(copyButton(() => value, "Copy"), `Copy the ${label.toLowerCase()}`)));
    }),
  );
}

/** Spend against a limit as a native <meter> (read by screen readers) with the figures beside it. */
export function spendBar(label: string, spentCents: number, limitCents: number): HTMLElement {
  const money = (cents: number) => `$${(cents / 100).toFixed(2)}`;
  return h(
    "div",
    { class: "spend" },
    h("meter", { min: 0, max: limitCents, low: Math.floor(limitCents * 0.8), high: Math.floor(limitCents * 0.95), optimum: 0, value: Math.min(spentCents, limitCents), "aria-label": label }),
    h("span", { class: "spend-figures" }, `${money(spentCents)} of ${money(limitCents)}`, spentCents >= limitCents ? [" ", badge("limit reached", "blocked")] : null),
  );
}
