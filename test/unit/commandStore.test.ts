// The cmd:// store (docs/injection.md#command-references) with real programs: argv without a shell, the trimmed
// standard output, a non-zero exit (its standard error never in the message), a deadline that kills the program,
// output beyond the bound, and a program that cannot start.
import { describe, expect, test } from "bun:test";
import { COMMAND_OUTPUT_MAX, CommandStore } from "../../src/vault/stores/command.ts";
import { StoreError } from "../../src/vault/stores/types.ts";

const store = new CommandStore({
  value: ["printf", "  spaced value \\n"],
  literal: ["printf", "%s", "$(echo injected); rm -rf /"],
  fails: ["sh", "-c", "echo sk_live_in_stderr >&2; exit 4"],
  slow: ["sleep", "30"],
  huge: ["head", "-c", String(COMMAND_OUTPUT_MAX + 1), "/dev/zero"],
  missing: ["/nonexistent/credgate-no-such-program"],
});
const read = (name: string, ms = 10_000) => store.read({ kind: "cmd", name }, AbortSignal.timeout(ms));
const failure = async (p: Promise<string>): Promise<StoreError> => {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(StoreError);
    return err as StoreError;
  }
  throw new Error("expected a StoreError");
};

describe("cmd:// store", () => {
  test("stdout trimmed is the value; arguments are passed as they are, no shell", async () => {
    expect(await read("value")).toBe("spaced value");
    expect(await read("literal")).toBe("$(echo injected); rm -rf /");
  });

  test("a non-zero exit names the status and the length of stderr, never its text", async () => {
    const e = await failure(read("fails"));
    expect(e.reason).toBe("command_failed");
    expect(e.message).toBe('The command for "fails" exited with status 4; it wrote 17 characters to standard error (not shown).');
    expect(e.message).not.toContain("sk_live");
  });

  test("past the deadline the program is killed; too much output and a missing program are failures", async () => {
    const started = Date.now();
    expect((await failure(read("slow", 300))).reason).toBe("timeout");
    expect(Date.now() - started).toBeLessThan(20_000);
    expect((await failure(read("huge"))).reason).toBe("command_output_too_large");
    expect((await failure(read("missing"))).reason).toMatch(/^command_(not_started|failed)$/);
    expect((await failure(read("unknown"))).message).toBe('Secret command "unknown" is not configured');
  });
});
