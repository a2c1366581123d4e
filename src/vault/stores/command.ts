// `cmd://<name>` (docs/injection.md#command-references): a self-hosted instance's own program prints the value —
// `pass show`, `op read`, a script. The argv comes from CREDGATE_SECRET_COMMANDS and runs without a shell (nothing
// of the reference reaches the command line); its standard output, trimmed, is the value. A command that exits
// non-zero, prints nothing, prints too much or outlives the read's deadline is a failed read. Its standard error is
// never logged nor shown: a failing `pass` or script may well print the secret or a token there; only its length is.
// It runs with credgate's environment minus every CREDGATE_* variable: what `pass` or `op` need (HOME, PATH,
// OP_SERVICE_ACCOUNT_TOKEN…) is there, credgate's own master key, database URL and store credentials are not.
import type { StoreRef } from "../../core/storeRefs.ts";
import { readBounded } from "../../core/boundedRead.ts";
import { StoreError, type SecretStore, type StoreContext } from "./types.ts";

/** The most a command may print: a value is a key or a password, never megabytes. */
export const COMMAND_OUTPUT_MAX = 64 * 1024;

/** The environment of a command: this process's, without credgate's own settings. */
export function commandEnv(env: Record<string, string | undefined> = process.env): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) if (value !== undefined && !name.startsWith("CREDGATE_")) out[name] = value;
  return out;
}

export class CommandStore implements SecretStore {
  readonly #env = commandEnv();

  constructor(private readonly commands: Record<string, string[]>) {}

  async read(ref: StoreRef, signal: AbortSignal): Promise<string> {
    if (ref.kind !== "cmd") throw new StoreError("wrong_store", "This reference is not a command.");
    const argv = Object.hasOwn(this.commands, ref.name) ? this.commands[ref.name]! : null;
    if (argv === null) throw new StoreError("not_configured", `Secret command "${ref.name}" is not configured`);
    let child: ReturnType<typeof Bun.spawn<"ignore", "pipe", "pipe">>;
    try {
      child = Bun.spawn(argv, { stdin: "ignore", stdout: "pipe", stderr: "pipe", env: this.#env, signal, killSignal: "SIGKILL" });
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
