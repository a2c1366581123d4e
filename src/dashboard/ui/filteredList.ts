// A list read page by page with the API's cursor ("Load more") and filtered by fields kept in the URL, so that
// a filtered view is a link: the request logs and the audit log.
import { queryString } from "./api.ts";
import { button, errorText, notice } from "./components.ts";
import { h, replace } from "./h.ts";
import type { PageCtx } from "./types.ts";

/** An ISO time as a `datetime-local` input shows it (local time, minutes). */
export function toInput(iso: string | null): string {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return "";
  return new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
}

const fromInput = (v: string) => (v ? new Date(v).toISOString() : null);

export interface FilteredList<T> {
  /** Under the list: "Load more" while there are pages, then the end. */
  more: HTMLElement;
  /** Reads the first page for the URL's filters (again). */
  reload(): Promise<void>;
  /** The filter form's values become the URL's query; the list is read again. */
  apply(values: Record<string, string | boolean>): Promise<void>;
}

/**
 * `path`'s pages with the filters `filters` (read from the URL; `since` and `until` are times), appended to `rows`
 * and shown by `draw` page after page.
 */
export function filteredList<T>(
  ctx: PageCtx,
  opts: { path: string; filters: readonly string[]; rows: T[]; draw: () => void; endText: string },
): FilteredList<T> {
  const q = ctx.query;
  const more = h("div", { class: "actions" });
  const load = async (cursor: string | null): Promise<void> => {
    const params: Record<string, string | null> = {};
    for (const k of opts.filters) params[k] = q.get(k);
    const page = await ctx.api.get<{ data: T[]; nextCursor: string | null }>(`${opts.path}${queryString({ ...params, limit: 50, cursor })}`);
    opts.rows.push(...page.data);
    opts.draw();
    replace(
      more,
      page.nextCursor
        ? button("Load more", async (ev) => {
            (ev.currentTarget as HTMLButtonElement).disabled = true;
            try {
              await load(page.nextCursor);
            } catch (err) {
              replace(more, notice("error", errorText(err)));
            }
          })
        : opts.rows.length > 0
          ? h("p", { class: "hint" }, opts.endText)
          : null,
    );
  };
  return {
    more,
    reload: () => load(null),
    async apply(values) {
      const next: Record<string, string | null> = {};
      for (const k of opts.filters) {
        const raw = String(values[k] ?? "").trim();
        next[k] = k === "since" || k === "until" ? fromInput(raw) : raw || null;
      }
      ctx.setQuery(next);
      for (const k of [...q.keys()]) q.delete(k);
      for (const [k, val] of Object.entries(next)) if (val) q.set(k, val);
      opts.rows.length = 0;
      await load(null);
    },
  };
}
