// The secret-store settings of the Config (docs/configuration.md#secret-stores): credgate's own credentials for
// the organization's stores, the commands of `cmd://` references and the value cache's lifetime.
import { ConfigError, nonEmpty, parsePositive, type Env } from "./configParsing.ts";

export interface StoreSettings {
  vaultAddr: string | null;
  vaultToken: string | null;
  vaultRoleId: string | null;
  vaultSecretId: string | null;
  vaultNamespace: string | null;
  awsAccessKeyId: string | null;
  awsSecretAccessKey: string | null;
  gcpServiceAccountFile: string | null;
  azureTenantId: string | null;
  azureClientId: string | null;
  azureClientSecret: string | null;
  /** CREDGATE_SECRET_COMMANDS: name → argv (no shell), self-hosted only; null when unset. */
  secretCommands: Record<string, string[]> | null;
  /** CREDGATE_STORE_CACHE_SECONDS: how long a value read from a store is served from memory. */
  storeCacheSeconds: number;
}

const COMMANDS_SHAPE = 'CREDGATE_SECRET_COMMANDS must be a JSON object of {"name": ["program", "arg", ...]}';

/**
 * `{name: [argv…]}`. The message never quotes the variable's text: an argv may carry a token. In cloud mode the
 * variable is refused outright — a hosted instance must not run commands for its tenants.
 */
export function parseSecretCommands(raw: string | undefined, mode: string): Record<string, string[]> | null {
  const text = nonEmpty(raw);
  if (text === null) return null;
  if (mode === "cloud") throw new ConfigError("CREDGATE_SECRET_COMMANDS is for self-hosted instances and is refused in cloud mode");
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ConfigError(`${COMMANDS_SHAPE}: it is not valid JSON`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new ConfigError(COMMANDS_SHAPE);
  const out: Record<string, string[]> = Object.create(null);
  for (const [name, argv] of Object.entries(parsed)) {
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(name)) {
      throw new ConfigError(`CREDGATE_SECRET_COMMANDS: "${name}" is not a usable name (letters, digits, ".", "_" and "-")`);
    }
    if (!Array.isArray(argv) || argv.length === 0 || !argv.every((a) => typeof a === "string") || argv[0] === "") {
      throw new ConfigError(`CREDGATE_SECRET_COMMANDS: "${name}" must be a non-empty array of strings (the program, then its arguments)`);
    }
    out[name] = argv as string[];
  }
  return out;
}

export function parseStoreSettings(env: Env, mode: string): StoreSettings {
  return {
    vaultAddr: nonEmpty(env.CREDGATE_VAULT_ADDR),
    vaultToken: nonEmpty(env.CREDGATE_VAULT_TOKEN),
    vaultRoleId: nonEmpty(env.CREDGATE_VAULT_ROLE_ID),
    vaultSecretId: nonEmpty(env.CREDGATE_VAULT_SECRET_ID),
    vaultNamespace: nonEmpty(env.CREDGATE_VAULT_NAMESPACE),
    awsAccessKeyId: nonEmpty(env.CREDGATE_AWS_ACCESS_KEY_ID),
    awsSecretAccessKey: nonEmpty(env.CREDGATE_AWS_SECRET_ACCESS_KEY),
    gcpServiceAccountFile: nonEmpty(env.CREDGATE_GCP_SERVICE_ACCOUNT_FILE),
    azureTenantId: nonEmpty(env.CREDGATE_AZURE_TENANT_ID),
    azureClientId: nonEmpty(env.CREDGATE_AZURE_CLIENT_ID),
    azureClientSecret: nonEmpty(env.CREDGATE_AZURE_CLIENT_SECRET),
    secretCommands: parseSecretCommands(env.CREDGATE_SECRET_COMMANDS, mode),
    storeCacheSeconds: parsePositive("CREDGATE_STORE_CACHE_SECONDS", env.CREDGATE_STORE_CACHE_SECONDS, 60),
  };
}
