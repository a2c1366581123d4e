// Flag-or-environment options for the benchmark scripts: `--name value`, `--name=value`, or an env variable.
import { resolve } from "node:path";

function raw(flag: string, env: string): string | undefined {
  const args = process.argv.slice(2);
  const i = args.indexOf(flag);
  if (i !== -1) return args[i + 1];
  return args.find((a) => a.startsWith(`${flag}=`))?.slice(flag.length + 1) ?? process.env[env];
}

export function numberOption(flag: string, env: string, fallback: number): number {
  const text = raw(flag, env);
  if (text === undefined || text === "") return fallback;
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0) {
    console.error(`${flag} / ${env} must be a positive number, got "${text}"`);
    process.exit(2);
  }
  return n;
}

export function pathOption(flag: string, env: string): string | undefined {
  const text = raw(flag, env);
  return text ? resolve(text) : undefined;
}

export function flag(name: string, env: string): boolean {
  return process.argv.includes(name) || process.env[env] === "1";
}

export function whatIfOption(flagName: string, env: string): string[] {
  const text = raw(flagName, env);
  const known = ["no-log", "log-time-ids"]; // bench/anatomy/whatif.ts
  const list = (text ?? "").split(",").map((x) => x.trim()).filter(Boolean);
  for (const item of list) {
    if (!known.includes(item)) {
      console.error(`${flagName} / ${env}: unknown "${item}" (known: ${known.join(", ")})`);
      process.exit(2);
    }
  }
  return list;
}
