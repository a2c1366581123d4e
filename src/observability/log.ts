// Structured JSON log lines on stdout. Callers pass identifiers and counts, never a secret value.
// Lines written while a request is handled carry that request's fields (its `requestId`): the handler runs
// inside `log.withContext`, and every line written from it, however deep, picks the fields up.
import { AsyncLocalStorage } from "node:async_hooks";

type Fields = Record<string, unknown>;

let quiet = false;
const context = new AsyncLocalStorage<Fields>();

function write(level: string, msg: string, fields: Fields = {}): void {
  if (quiet && level !== "error") return;
  // The request's fields come last, so a line reads the same with or without them; the caller's fields win.
  process.stdout.write(JSON.stringify({ time: new Date().toISOString(), level, msg, ...fields, ...context.getStore(), ...fields }) + "\n");
}

export const log = {
  info: (msg: string, fields?: Fields) => write("info", msg, fields),
  warn: (msg: string, fields?: Fields) => write("warn", msg, fields),
  error: (msg: string, fields?: Fields) => write("error", msg, fields),
  /** Runs `work` so that every line it logs (also after its awaits) carries `fields`. */
  withContext<A extends unknown[], T>(fields: Fields, work: (...args: A) => T, ...args: A): T {
    const outer = context.getStore();
    return context.run(outer === undefined ? fields : { ...outer, ...fields }, work, ...args);
  },
  /** Tests that drive the app in-process silence info lines. */
  setQuiet(value: boolean) {
    quiet = value;
  },
};
