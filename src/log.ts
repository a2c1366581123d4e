// Structured JSON log lines on stdout. Callers pass identifiers and counts, never a secret value.
type Fields = Record<string, unknown>;

let quiet = false;

function write(level: string, msg: string, fields: Fields = {}): void {
  if (quiet && level !== "error") return;
  process.stdout.write(JSON.stringify({ time: new Date().toISOString(), level, msg, ...fields }) + "\n");
}

export const log = {
  info: (msg: string, fields?: Fields) => write("info", msg, fields),
  warn: (msg: string, fields?: Fields) => write("warn", msg, fields),
  error: (msg: string, fields?: Fields) => write("error", msg, fields),
  /** Tests that drive the app in-process silence info lines. */
  setQuiet(value: boolean) {
    quiet = value;
  },
};
