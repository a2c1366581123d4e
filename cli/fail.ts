// Uniform fatal exit for CLI commands: one clear line on stderr, exit code 1.
import { ConfigError } from "../src/runtime/config.ts";

export function fail(err: unknown): never {
  const message = err instanceof ConfigError || err instanceof Error ? err.message : String(err);
  process.stderr.write(`credgate: ${message}\n`);
  process.exit(1);
}
