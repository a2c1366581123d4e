// Secrets (docs/injection.md#secrets): the list item, and the answer to a creation.
import { Type as T, type Static } from "@sinclair/typebox";
import { Enum, Nullable, Timestamp, Uuid } from "./common.ts";
import type { Surface } from "../placeholders.ts";
import type { AzureClientSecretConfig, GcpServiceAccountConfig } from "../cloudIdentity.ts";

export const SecretType = Enum("llm_a", "llm_b", "generic");
export const SecretScope = Enum("project", "organization", "partner");
export const ValueSource = Enum("inline", "external_vault", "vault");

/** An injectionConfig as code reads it: field by field (the injector asks which one is set). */
interface InjectionFields {
  headerName?: string;
  valueFormat?: string;
  paramName?: string;
  paramFormat?: string;
  pathTemplate?: string;
  pathRegex?: string;
  pathReplacement?: string;
  placeholder?: string;
  surfaces?: Surface[];
  awsSigV4?: AwsSigV4Config;
  githubApp?: GithubAppConfig;
  gcpServiceAccount?: GcpServiceAccountConfig;
  azureClientSecret?: AzureClientSecretConfig;
  database?: DatabaseConfig;
  ssh?: SshConfig;
}

/** Signs requests with a long-term AWS key (docs/injection.md#aws-signature-v4); the value is the secret access key. */
export interface AwsSigV4Config {
  accessKeyId: string;
  region?: string;
  service?: string;
}

/** Mints installation tokens (docs/injection.md#github-app); the value is the app's PEM private key. */
export interface GithubAppConfig {
  appId: number;
  installationId: number;
}

/** Where the PostgreSQL broker connects with this password (docs/databases.md#the-database-secret); stored with every default filled in. */
export interface DatabaseConfig {
  engine: "postgresql";
  port?: number;
  user: string;
  /** Allowed database names; absent: any. */
  databases?: string[];
  tls?: DatabaseTls;
  readOnly?: boolean;
  writes?: DatabaseWrites;
}
export type DatabaseTls = "verify-full" | "require" | "off";
export type DatabaseWrites = "allow" | "approve" | "block";

/** Where credgate logs in over SSH with this private key (docs/ssh.md#the-ssh-secret); stored with every default filled in. */
export interface SshConfig {
  user?: string;
  /** known_hosts lines pinning the server's host keys. */
  knownHosts: string;
  commands?: SshCommands;
  push?: SshPush;
}
export type SshCommands = "git" | "any";
export type SshPush = "allow" | "approve" | "block";

/**
 * Where a generic secret goes (docs/injection.md): on the wire exactly one of the variants (what the
 * schema publishes); stored and read as the fields of whichever it is (core/secretRules.ts keeps it one).
 */
export const InjectionConfig = T.Unsafe<InjectionFields>(
  T.Union(
    [
      T.Object({ headerName: T.String(), valueFormat: T.Optional(T.String()) }),
      T.Object({ paramName: T.String(), paramFormat: T.Optional(T.String()) }),
      T.Object({ pathTemplate: T.String() }),
      T.Object({ pathRegex: T.String(), pathReplacement: T.String() }),
      T.Object({
        placeholder: T.String({ description: "8-128 characters of A-Z a-z 0-9 . _ ~ -, replaced by the value where the agent wrote it" }),
        surfaces: T.Optional(T.Array(Enum("header", "query", "path", "body", "websocket"), { description: "Where it is replaced; all five when omitted" })),
      }),
      T.Object({
        awsSigV4: T.Object({
          accessKeyId: T.String({ pattern: "^[A-Z0-9]{16,128}$" }),
          region: T.Optional(T.String({ pattern: "^[a-z0-9-]{2,32}$" })),
          service: T.Optional(T.String({ pattern: "^[a-z0-9-]{2,64}$" })),
        }),
      }),
      T.Object({ githubApp: T.Object({ appId: T.Integer({ minimum: 1 }), installationId: T.Integer({ minimum: 1 }) }) }),
      T.Object({
        gcpServiceAccount: T.Object({
          scopes: T.Optional(T.Array(T.String(), { minItems: 1, description: "OAuth scopes of the minted tokens; default https://www.googleapis.com/auth/cloud-platform" })),
        }),
      }),
      T.Object({
        azureClientSecret: T.Object({
          tenantId: Uuid,
          clientId: Uuid,
          scope: T.Optional(T.String({ description: "e.g. https://management.azure.com/.default; otherwise the request's host implies it" })),
        }),
      }),
      T.Object({
        database: T.Object(
          {
            engine: T.Literal("postgresql"),
            port: T.Optional(T.Integer({ minimum: 1, maximum: 65535, default: 5432 })),
            user: T.String({ minLength: 1, maxLength: 63, description: "The real database user credgate logs in as" }),
            databases: T.Optional(T.Array(T.String({ minLength: 1, maxLength: 63 }), { minItems: 1, maxItems: 100, description: "Allowed database names; any when absent" })),
            tls: T.Optional(Enum("verify-full", "require", "off")),
            readOnly: T.Optional(T.Boolean({ default: false })),
            writes: T.Optional(Enum("allow", "approve", "block")),
          },
          { description: "A PostgreSQL server reached through credgate's database listener; the value is the password (docs/databases.md)" },
        ),
      }),
      T.Object({
        ssh: T.Object(
          {
            user: T.Optional(T.String({ minLength: 1, maxLength: 255, default: "git", description: "The user credgate logs in as" })),
            knownHosts: T.String({ description: "known_hosts lines pinning the server's host keys" }),
            commands: T.Optional(Enum("git", "any")),
            push: T.Optional(Enum("allow", "approve", "block")),
          },
          { description: "An SSH server (git) reached through the gateway on port 22; the value is an OpenSSH private key (docs/ssh.md)" },
        ),
      }),
    ],
    { $id: "InjectionConfig" },
  ),
);
export type InjectionConfig = Static<typeof InjectionConfig>;

export const SecretMetadata = T.Object(
  {
    authMode: T.Optional(Enum("api-key", "oauth")),
    accountId: T.Optional(T.String()),
    opDisplay: T.Optional(T.Object({ vault: T.Optional(T.String()), item: T.Optional(T.String()), field: T.Optional(T.String()) })),
  },
  { $id: "SecretMetadata" },
);
export type SecretMetadata = Static<typeof SecretMetadata>;

export const Secret = T.Object(
  {
    id: Uuid,
    name: T.String(),
    type: SecretType,
    valueSource: ValueSource,
    opRef: Nullable(T.String()),
    storeRef: Nullable(T.String({ description: "the secret store reference when valueSource is vault (docs/injection.md#secret-stores)" })),
    hostPattern: T.String(),
    pathPattern: Nullable(T.String()),
    injectionConfig: Nullable(InjectionConfig),
    metadata: Nullable(SecretMetadata),
    scope: SecretScope,
    typeLabel: T.String(),
    createdAt: Timestamp,
  },
  { $id: "Secret" },
);
export type Secret = Static<typeof Secret>;

export const SecretCreated = T.Object(
  {
    id: Uuid,
    name: T.String(),
    type: SecretType,
    valueSource: ValueSource,
    opRef: Nullable(T.String()),
    storeRef: Nullable(T.String({ description: "the secret store reference when valueSource is vault (docs/injection.md#secret-stores)" })),
    hostPattern: T.String(),
    pathPattern: Nullable(T.String()),
    createdAt: Timestamp,
    preview: T.Optional(T.String({ description: "inline secrets only (never external_vault or vault): first 4 + •••••••• + last 4, or •••••••• for short values" })),
  },
  { $id: "SecretCreated" },
);
export type SecretCreated = Static<typeof SecretCreated>;

/** The secret form's test of a signed or minted secret (docs/injection.md#testing-a-signed-or-minted-secret). */
export const SecretTestResult = T.Object(
  { ok: T.Boolean(), message: T.String({ description: "What the issuer (AWS STS, GitHub) or the secret store answered, in a sentence; never a value" }) },
  { $id: "SecretTestResult" },
);
export type SecretTestResult = Static<typeof SecretTestResult>;
