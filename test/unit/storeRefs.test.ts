import { describe, expect, test } from "bun:test";
import { notConfiguredMessage, parseStoreRef, STORE_NAME_MESSAGES, STORE_SCHEME_MESSAGE, storeLabel, type StoreRef } from "../../src/core/storeRefs.ts";
import { outsidePrefixMessage, storeRefUnderPrefix } from "../../src/core/storeRefTenancy.ts";
import { ConfigError, loadConfig } from "../../src/runtime/config.ts";
import { checkStoreRef } from "../../src/services/storeRefChecks.ts";

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
    expect(ok("gcp-sm://projects/acme-prod/secrets/stripe")).toEqual({ kind: "gcp-sm", project: "acme-prod", secret: "stripe", version: "latest" });
    expect(ok("gcp-sm://projects/acme-prod/secrets/stripe/versions/3")).toEqual({ kind: "gcp-sm", project: "acme-prod", secret: "stripe", version: "3" });
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
    expect(notConfiguredMessage(ok("gcp-sm://projects/acme-prod/secrets/s"))).toBe("Google Secret Manager is not configured");
    expect(notConfiguredMessage(ok("azure-kv://acme-kv/s"))).toBe("Azure Key Vault is not configured");
    expect(notConfiguredMessage(ok("cmd://stripe"))).toBe('Secret command "stripe" is not configured');
  });
});

describe("each store's naming rules, when written", () => {
  const cases: [string, string][] = [
    // Azure: a vault name is a DNS label of the request's host; a secret name is letters, digits and hyphens.
    ["azure-kv://evil.example?x/slack-bot", STORE_NAME_MESSAGES.azureVault],
    ["azure-kv://evil.example/slack-bot", STORE_NAME_MESSAGES.azureVault],
    ["azure-kv://ab/slack-bot", STORE_NAME_MESSAGES.azureVault],
    ["azure-kv://a234567890123456789012345/s", STORE_NAME_MESSAGES.azureVault],
    ["azure-kv://prod--vault/s", STORE_NAME_MESSAGES.azureVault],
    ["azure-kv://1prodvault/s", STORE_NAME_MESSAGES.azureVault],
    ["azure-kv://prodvault-/s", STORE_NAME_MESSAGES.azureVault],
    ["azure-kv://prodvault/slack_bot", STORE_NAME_MESSAGES.azureSecret],
    ["azure-kv://prodvault/slack.bot", STORE_NAME_MESSAGES.azureSecret],
    [`azure-kv://prodvault/${"s".repeat(128)}`, STORE_NAME_MESSAGES.azureSecret],
    // AWS: the region is a label of the endpoint's host; a name is letters, digits and /_+=.@- (or an ARN).
    ["aws-sm://us-east-1.evil.example/x", "storeRef must look like aws-sm://<region>/<name>[#<json field>]"],
    ["aws-sm://US-EAST-1/x", "storeRef must look like aws-sm://<region>/<name>[#<json field>]"],
    ["aws-sm://us-east-1?/x", "storeRef must look like aws-sm://<region>/<name>[#<json field>]"],
    ["aws-sm://us-east-1/a?b", STORE_NAME_MESSAGES.awsName],
    ["aws-sm://us-east-1/a%2fb", STORE_NAME_MESSAGES.awsName],
    [`aws-sm://us-east-1/${"n".repeat(513)}`, STORE_NAME_MESSAGES.awsName],
    // Google: project id or number, secret id, version number or alias.
    ["gcp-sm://projects/Acme/secrets/s", STORE_NAME_MESSAGES.gcpProject],
    ["gcp-sm://projects/acme/secrets/s", STORE_NAME_MESSAGES.gcpProject],
    ["gcp-sm://projects/acme-prod-/secrets/s", STORE_NAME_MESSAGES.gcpProject],
    ["gcp-sm://projects/acme%2fprod/secrets/s", STORE_NAME_MESSAGES.gcpProject],
    ["gcp-sm://projects/../secrets/s", "storeRef must look like gcp-sm://projects/<project>/secrets/<secret>[/versions/<version>]"],
    ["gcp-sm://projects/acme-prod/secrets/a.b", STORE_NAME_MESSAGES.gcpSecret],
    [`gcp-sm://projects/acme-prod/secrets/${"s".repeat(256)}`, STORE_NAME_MESSAGES.gcpSecret],
    ["gcp-sm://projects/acme-prod/secrets/s/versions/0", STORE_NAME_MESSAGES.gcpVersion],
    ["gcp-sm://projects/acme-prod/secrets/s/versions/-1", STORE_NAME_MESSAGES.gcpVersion],
    ["gcp-sm://projects/acme-prod/secrets/s/versions/a:b", STORE_NAME_MESSAGES.gcpVersion],
    // Vault: no empty, "." or ".." segment in the mount or the path.
    ["vault://./x#f", "storeRef must look like vault://<mount>/<path>#<field>"],
    ["vault://secret/a/./b#f", "storeRef must look like vault://<mount>/<path>#<field>"],
    ["vault://secret/a/#f", "storeRef must look like vault://<mount>/<path>#<field>"],
    ["vault-db://../creds#x", "storeRef must look like vault-db://<mount>/<role>"],
    ["vault-db://database/..", "storeRef must look like vault-db://<mount>/<role>"],
  ];

  test("a part that breaks its store's rules gets the exact message", () => {
    for (const [ref, message] of cases) expect({ ref, message: parseStoreRef(ref) }).toEqual({ ref, message });
  });

  test("names each store accepts", () => {
    for (const ref of [
      "azure-kv://abc/s",
      "azure-kv://a23456789012345678901234/s-1",
      `azure-kv://Prod-Vault-2/${"s".repeat(127)}`,
      "aws-sm://us-east-1/prod/db_pass+2=x.y@z-w",
      "aws-sm://cn-north-1/x",
      "aws-sm://us-gov-west-1/x",
      "aws-sm://us-isob-east-1/x",
      "aws-sm://ap-southeast-3/x",
      "aws-sm://eu-west-1/arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/db-AbCdEf",
      "gcp-sm://projects/acme-prod/secrets/S_e-c/versions/12",
      "gcp-sm://projects/123456789012/secrets/s/versions/latest",
      "gcp-sm://projects/example.com:acme-prod/secrets/s/versions/stable_2",
      "vault://secret/a.b/c..d/.e#f",
    ]) {
      expect({ ref, parsed: typeof parseStoreRef(ref) }).toEqual({ ref, parsed: "object" });
    }
  });
});

describe("cloud mode: the organization's prefix (core/storeRefTenancy.ts)", () => {
  const ORG = "abcdefghijklmnop";
  test("under the prefix: the first Vault path segment, `<org>-` or `<org>/` before a name", () => {
    for (const ref of [`vault://secret/${ORG}/a#f`, `vault://kv/${ORG}/a/b#f`, `vault-db://database/${ORG}-ro`, `aws-sm://us-east-1/${ORG}/a`, `aws-sm://us-east-1/${ORG}/a/b#k`, `gcp-sm://projects/acme-prod/secrets/${ORG}-a`, `azure-kv://acme-kv/${ORG}-a`]) {
      expect({ ref, under: storeRefUnderPrefix(ok(ref), ORG) }).toEqual({ ref, under: true });
    }
  });

  test("anything else is outside, commands included", () => {
    const other = "ponmlkjihgfedcba";
    for (const ref of [
      `vault://secret/${other}/a#f`, `vault://${ORG}/a#f`, `vault://secret/x/${ORG}/a#f`, `vault://secret/${ORG}x/a#f`,
      `vault-db://database/${ORG}`, `vault-db://database/${ORG}-`, `vault-db://${ORG}-db/ro`, `vault-db://database/${other}-ro`,
      `aws-sm://us-east-1/${ORG}`, `aws-sm://us-east-1/${ORG}-a`, `aws-sm://us-east-1/${ORG}x/a`, `aws-sm://us-east-1/arn:aws:secretsmanager:us-east-1:1:secret:${ORG}/a`,
      `gcp-sm://projects/acme-prod/secrets/${ORG}`, `gcp-sm://projects/acme-prod/secrets/${ORG}_a`, `gcp-sm://projects/acme-prod/secrets/${ORG.toUpperCase()}-a`,
      `azure-kv://acme-kv/${ORG}`, `azure-kv://acme-kv/${ORG}a`, `azure-kv://${ORG}/a`, "cmd://stripe",
    ]) {
      expect({ ref, under: storeRefUnderPrefix(ok(ref), ORG) }).toEqual({ ref, under: false });
    }
    expect(storeRefUnderPrefix(ok("vault://secret/x/a#f"), "")).toBe(false);
    expect(outsidePrefixMessage(ORG)).toBe(`In cloud mode a storeRef must name a secret under this organization's prefix "${ORG}"`);
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

describe("write checks (services/storeRefChecks.ts)", () => {
  const everything = { unavailable: () => null };
  const flat = (f: () => unknown): unknown => {
    try {
      f();
    } catch (err) {
      return (err as { body?: unknown; message: string }).message;
    }
    return "no error";
  };

  test("vault-db:// only on a database secret; trimmed; the store's own message first", () => {
    expect(flat(() => checkStoreRef("vault-db://database/ro", { headerName: "x" }, everything))).toBe("vault-db:// references are only for database secrets (injectionConfig.database)");
    expect(checkStoreRef(" vault-db://database/ro ", { database: { engine: "postgresql", user: "u" } } as never, everything)).toBe("vault-db://database/ro");
    expect(flat(() => checkStoreRef("vault-db://database/ro", null, { unavailable: () => "HashiCorp Vault is not configured" }))).toBe("HashiCorp Vault is not configured");
  });
});
