// `cmd://<name>` (docs/injection.md#command-references): a self-hosted instance's own program prints the value —
// `pass show`, `op read`, a script. The argv comes from CREDGATE_SECRET_COMMANDS and runs without a shell (nothing
// of the reference reaches the command line); its standard output, trimmed, is the value. A command that exits
// non-zero, prints nothing, prints too much or outlives the read's deadline is a failed read. Its standard error is
// never logged nor shown: a failing `pass` or script may well print the secret or a token there; only its length is.
import type { StoreRef } from "../../core/storeRefs.ts";
import { StoreError, type SecretStore, type StoreContext } from "./types.ts";

/** The most a command may print: a value is a key or a password, never megabytes. */
export const COMMAND_OUTPUT_MAX = 64 * 1024;

async function readBounded(stream: ReadableStream<Uint8Array>, max: number): Promise<string | null> {
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      void reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString("utf8");
}

export class CommandStore implements SecretStore {
  constructor(private readonly commands: Record<string, string[]>) {}

  async read(ref: StoreRef, signal: AbortSignal): Promise<string> {
    if (ref.kind !== "cmd") throw new StoreError("wrong_store", "This reference is not a command.");
    const argv = Object.hasOwn(this.commands, ref.name) ? this.commands[ref.name]! : null;
    if (argv === null) throw new StoreError("not_configured", `Secret command "${ref.name}" is not configured`);
    let child: ReturnType<typeof Bun.spawn<"ignore", "pipe", "pipe">>;
    try {
      child = Bun.spawn(argv, { stdin: "ignore", stdout: "pipe", stderr: "pipe", signal, killSignal: "SIGKILL" });
    } catch {
      throw new StoreError("command_not_started", `The command for "${ref.name}" could not be started (${argv[0]}).`);
    }
    const [out, err, code] = await Promise.all([readBounded(child.stdout, COMMAND_OUTPUT_MAX), readBounded(child.stderr, COMMAND_OUTPUT_MAX), child.exited]);
    if (signal.aborted) throw new StoreError("timeout", `The command for "${ref.name}" did not finish in time.`);
    if (code !== 0) {
      const said = err === null ? "" : err.trim().length > 0 ? `; it wrote ${err.trim().length} characters to standard error (not shown)` : "";
      throw new StoreError("command_failed", `The command for "${ref.name}" exited with status ${code}${said}.`);
    }
    if (out === null) throw new StoreError("command_output_too_large", `The command for "${ref.name}" printed more than ${COMMAND_OUTPUT_MAX} bytes.`);
    return out.trim();
  }
}

export function commandStoreFrom(ctx: StoreContext): SecretStore | null {
  return ctx.config.secretCommands === null ? null : new CommandStore(ctx.config.secretCommands);
}
