import { describe, expect, test } from "bun:test";
import { notConfiguredMessage, parseStoreRef, STORE_SCHEME_MESSAGE, storeLabel, type StoreRef } from "../../src/core/storeRefs.ts";
import { ConfigError, loadConfig } from "../../src/runtime/config.ts";

const ok = (ref: string): StoreRef => {
  const parsed = parseStoreRef(ref);
  if (typeof parsed === "string") throw new Error(`${ref}: ${parsed}`);
  return parsed;
};

describe("parseStoreRef", () => {
  test("vault:// takes a mount, a path that may hold slashes, and a field", () => {
    expect(ok("vault://secret/app#token")).toEqual({ kind: "vault", mount: "secret", path: "app", field: "token" });
    expect(ok("vault://secret/team/app#api_key")).toEqual({ kind: "vault", mount: "secret", path: "team/app", field: "api_key" });
    for (const bad of ["vault://secret/app", "vault://secret#token", "vault://secret/app#", "vault:///app#t", "vault://secret//app#t", "vault://secret/../x#t", "vault://secret/a b#t"]) {
      expect(parseStoreRef(bad)).toBe("storeRef must look like vault://<mount>/<path>#<field>");
    }
  });

  test("vault-db:// takes a mount and a role", () => {
    expect(ok("vault-db://database/readonly")).toEqual({ kind: "vault-db", mount: "database", role: "readonly" });
    for (const bad of ["vault-db://database", "vault-db://database/a/b", "vault-db://database/r#x", "vault-db:///r"]) {
      expect(parseStoreRef(bad)).toBe("storeRef must look like vault-db://<mount>/<role>");
    }
  });

  test("aws-sm:// takes a region, a name that may hold slashes, and an optional JSON field", () => {
    expect(ok("aws-sm://eu-west-1/prod/stripe")).toEqual({ kind: "aws-sm", region: "eu-west-1", name: "prod/stripe", field: null });
    expect(ok("aws-sm://us-gov-west-1/db#password")).toEqual({ kind: "aws-sm", region: "us-gov-west-1", name: "db", field: "password" });
    for (const bad of ["aws-sm://eu-west-1", "aws-sm://eu-west-1/", "aws-sm://notaregion/x", "aws-sm://eu-west-1/x#", "aws-sm:///x"]) {
      expect(parseStoreRef(bad)).toBe("storeRef must look like aws-sm://<region>/<name>[#<json field>]");
    }
  });

  test("gcp-sm:// takes a project, a secret and a version (latest by default)", () => {
    expect(ok("gcp-sm://projects/acme/secrets/stripe")).toEqual({ kind: "gcp-sm", project: "acme", secret: "stripe", version: "latest" });
    expect(ok("gcp-sm://projects/acme/secrets/stripe/versions/3")).toEqual({ kind: "gcp-sm", project: "acme", secret: "stripe", version: "3" });
    for (const bad of ["gcp-sm://acme/stripe", "gcp-sm://projects/acme/secrets/", "gcp-sm://projects/acme/secrets/s/versions/", "gcp-sm://projects/acme/secrets/s/extra"]) {
      expect(parseStoreRef(bad)).toBe("storeRef must look like gcp-sm://projects/<project>/secrets/<secret>[/versions/<version>]");
    }
  });

  test("azure-kv:// takes a vault name and a secret", () => {
    expect(ok("azure-kv://acme-kv/stripe-key")).toEqual({ kind: "azure-kv", vault: "acme-kv", secret: "stripe-key" });
    for (const bad of ["azure-kv://acme-kv", "azure-kv://acme-kv/a/b", "azure-kv:///s"]) {
      expect(parseStoreRef(bad)).toBe("storeRef must look like azure-kv://<vault name>/<secret>");
    }
  });

  test("cmd:// takes a command name", () => {
    expect(ok("cmd://stripe-key")).toEqual({ kind: "cmd", name: "stripe-key" });
    for (const bad of ["cmd://", "cmd://a/b", "cmd://a b", "cmd://-x"]) {
      expect(parseStoreRef(bad)).toBe("storeRef must look like cmd://<name>");
    }
  });

  test("an unknown scheme gets the scheme message, names taken literally", () => {
    for (const bad of ["", "op://vault/item/field", "http://x", "VAULT://secret/a#b", "vault:/secret/a#b", "secret/a#b"]) {
      expect(parseStoreRef(bad)).toBe(STORE_SCHEME_MESSAGE);
    }
    expect(STORE_SCHEME_MESSAGE).toBe("storeRef must start with vault://, vault-db://, aws-sm://, gcp-sm://, azure-kv:// or cmd://");
    expect(ok("vault://secret/a%2Fb#f")).toEqual({ kind: "vault", mount: "secret", path: "a%2Fb", field: "f" });
  });

  test("labels and not-configured messages", () => {
    expect(storeLabel("vault")).toBe("HashiCorp Vault");
    expect(storeLabel("vault-db")).toBe("HashiCorp Vault");
    expect(notConfiguredMessage(ok("vault://s/a#b"))).toBe("HashiCorp Vault is not configured");
    expect(notConfiguredMessage(ok("aws-sm://eu-west-1/x"))).toBe("AWS Secrets Manager is not configured");
    expect(notConfiguredMessage(ok("gcp-sm://projects/p/secrets/s"))).toBe("Google Secret Manager is not configured");
    expect(notConfiguredMessage(ok("azure-kv://v/s"))).toBe("Azure Key Vault is not configured");
    expect(notConfiguredMessage(ok("cmd://stripe"))).toBe('Secret command "stripe" is not configured');
  });
});

describe("store settings", () => {
  test("read from the environment, cache 60 s by default", () => {
    const c = loadConfig({}, { CREDGATE_VAULT_ADDR: "https://vault.example:8200", CREDGATE_VAULT_TOKEN: "t", CREDGATE_AZURE_TENANT_ID: "tn" });
    expect(c.vaultAddr).toBe("https://vault.example:8200");
    expect(c.vaultToken).toBe("t");
    expect(c.azureTenantId).toBe("tn");
    expect(c.awsAccessKeyId).toBeNull();
    expect(c.secretCommands).toBeNull();
    expect(c.storeCacheSeconds).toBe(60);
    expect(loadConfig({}, { CREDGATE_STORE_CACHE_SECONDS: "5" }).storeCacheSeconds).toBe(5);
  });

  test("CREDGATE_SECRET_COMMANDS: a JSON object of argv arrays", () => {
    const c = loadConfig({}, { CREDGATE_SECRET_COMMANDS: '{"stripe":["/usr/bin/pass","show","stripe"]}' });
    expect(c.secretCommands).toEqual({ stripe: ["/usr/bin/pass", "show", "stripe"] });
  });

  test("CREDGATE_SECRET_COMMANDS: bad JSON and bad shapes are clear errors that never quote the text", () => {
    const cases: [string, string][] = [
      ['{"a": ["x", "sk_live_123"', 'CREDGATE_SECRET_COMMANDS must be a JSON object of {"name": ["program", "arg", ...]}: it is not valid JSON'],
      ['["x"]', 'CREDGATE_SECRET_COMMANDS must be a JSON object of {"name": ["program", "arg", ...]}'],
      ['{"a": "echo sk_live_123"}', 'CREDGATE_SECRET_COMMANDS: "a" must be a non-empty array of strings (the program, then its arguments)'],
      ['{"a": []}', 'CREDGATE_SECRET_COMMANDS: "a" must be a non-empty array of strings (the program, then its arguments)'],
      ['{"a b": ["x"]}', 'CREDGATE_SECRET_COMMANDS: "a b" is not a usable name (letters, digits, ".", "_" and "-")'],
    ];
    for (const [raw, message] of cases) {
      expect(() => loadConfig({}, { CREDGATE_SECRET_COMMANDS: raw })).toThrow(new ConfigError(message));
    }
  });

  test("CREDGATE_SECRET_COMMANDS is refused in cloud mode", () => {
    expect(() => loadConfig({ mode: "cloud" }, { CREDGATE_SECRET_COMMANDS: '{"a":["x"]}' })).toThrow(
      "CREDGATE_SECRET_COMMANDS is for self-hosted instances and is refused in cloud mode",
    );
  });
});
