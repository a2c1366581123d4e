// References to values kept in an organization's own secret store (docs/injection.md#secret-stores): the pure
// parser of every `storeRef` scheme. Names are taken literally (no percent-decoding): what the user typed is
// what credgate asks the store for.

export type StoreKind = "vault" | "vault-db" | "aws-sm" | "gcp-sm" | "azure-kv" | "cmd";

export type StoreRef =
  | { kind: "vault"; mount: string; path: string; field: string } // vault://<mount>/<path>#<field>
  | { kind: "vault-db"; mount: string; role: string } // vault-db://<mount>/<role>
  | { kind: "aws-sm"; region: string; name: string; field: string | null } // aws-sm://<region>/<name>[#<json field>]
  | { kind: "gcp-sm"; project: string; secret: string; version: string } // gcp-sm://projects/<p>/secrets/<s>[/versions/<v>]
  | { kind: "azure-kv"; vault: string; secret: string } // azure-kv://<vault name>/<secret>
  | { kind: "cmd"; name: string }; // cmd://<name>

export const STORE_SCHEME_MESSAGE = "storeRef must start with vault://, vault-db://, aws-sm://, gcp-sm://, azure-kv:// or cmd://";

/** The 400 message for a known scheme whose reference has the wrong shape. */
export const STORE_SHAPE_MESSAGES: Record<StoreKind, string> = {
  vault: "storeRef must look like vault://<mount>/<path>#<field>",
  "vault-db": "storeRef must look like vault-db://<mount>/<role>",
  "aws-sm": "storeRef must look like aws-sm://<region>/<name>[#<json field>]",
  "gcp-sm": "storeRef must look like gcp-sm://projects/<project>/secrets/<secret>[/versions/<version>]",
  "azure-kv": "storeRef must look like azure-kv://<vault name>/<secret>",
  cmd: "storeRef must look like cmd://<name>",
};

/**
 * The 400 messages for a reference whose parts are there but break its store's naming rules (docs/secret-stores.md,
 * docs/vault.md): checked when written, so a reference can never steer a request to another host or path.
 */
export const STORE_NAME_MESSAGES = {
  awsName: "storeRef's AWS secret name must be at most 512 letters, digits and /_+=.@- (or the secret's ARN)",
  gcpProject: "storeRef's Google project must be a project id (6 to 30 lowercase letters, digits and hyphens, starting with a letter) or a project number",
  gcpSecret: "storeRef's Google secret id must be 1 to 255 letters, digits, underscores and hyphens",
  gcpVersion: "storeRef's Google version must be a version number, latest or an alias (letters, digits, underscores and hyphens)",
  azureVault: "storeRef's Key Vault name must be 3 to 24 letters, digits and single hyphens, starting with a letter and not ending with a hyphen",
  azureSecret: "storeRef's Key Vault secret name must be 1 to 127 letters, digits and hyphens",
} as const;

/** Key Vault's naming rules: the vault name becomes a DNS label of the URL's host. */
export const AZURE_VAULT_NAME = /^[A-Za-z](?!.*--)[A-Za-z0-9-]{1,22}[A-Za-z0-9]$/;
export const AZURE_SECRET_NAME = /^[A-Za-z0-9-]{1,127}$/;
/** An AWS region becomes a label of the endpoint's host: `us-east-1`, `cn-north-1`, `us-gov-west-1`, `us-isob-east-1`. */
const AWS_REGION = /^[a-z]{2,4}(-[a-z]+){1,3}-\d{1,2}$/;
/** A secret's name (letters, digits and /_+=.@-, at most 512) or its ARN (which adds `:`; at most 2048). */
const AWS_NAME = /^(?:[A-Za-z0-9/_+=.@-]{1,512}|arn:[A-Za-z0-9/_+=.@:-]{1,2044})$/;
/** A project id (optionally domain-scoped, `example.com:my-project`) or a project number. */
const GCP_PROJECT = /^(?:(?:[a-z0-9-]+\.)+[a-z]+:)?[a-z][a-z0-9-]{4,28}[a-z0-9]$|^\d{1,20}$/;
const GCP_SECRET = /^[A-Za-z0-9_-]{1,255}$/;
const GCP_VERSION = /^(?:[1-9]\d{0,18}|[A-Za-z][A-Za-z0-9_-]{0,62})$/;

const SCHEMES: readonly StoreKind[] = ["vault-db", "vault", "aws-sm", "gcp-sm", "azure-kv", "cmd"];

/** Every part of a reference: no spaces or control characters, nothing empty. */
const PART = /^[^\s\u0000-\u001f\u007f#]+$/;
const SEGMENTS_OK = (s: string): boolean => s.split("/").every((p) => p !== "" && p !== "." && p !== "..");

/**
 * The parsed reference, or the 400 message for it (unknown scheme → STORE_SCHEME_MESSAGE; a known scheme with a
 * bad shape → its STORE_SHAPE_MESSAGES entry).
 */
export function parseStoreRef(ref: string): StoreRef | string {
  const kind = SCHEMES.find((k) => ref.startsWith(`${k}://`));
  if (kind === undefined) return STORE_SCHEME_MESSAGE;
  const rest = ref.slice(kind.length + 3);
  const parsed = parseRest(kind, rest);
  if (parsed === null) return STORE_SHAPE_MESSAGES[kind];
  return namingError(parsed) ?? parsed;
}

/** The message for a part that breaks its store's naming rules, or null. */
function namingError(ref: StoreRef): string | null {
  switch (ref.kind) {
    case "aws-sm":
      return AWS_NAME.test(ref.name) ? null : STORE_NAME_MESSAGES.awsName;
    case "gcp-sm":
      if (!GCP_PROJECT.test(ref.project)) return STORE_NAME_MESSAGES.gcpProject;
      if (!GCP_SECRET.test(ref.secret)) return STORE_NAME_MESSAGES.gcpSecret;
      return GCP_VERSION.test(ref.version) ? null : STORE_NAME_MESSAGES.gcpVersion;
    case "azure-kv":
      if (!AZURE_VAULT_NAME.test(ref.vault)) return STORE_NAME_MESSAGES.azureVault;
      return AZURE_SECRET_NAME.test(ref.secret) ? null : STORE_NAME_MESSAGES.azureSecret;
    default:
      return null;
  }
}

function parseRest(kind: StoreKind, rest: string): StoreRef | null {
  switch (kind) {
    case "vault": {
      const hash = rest.indexOf("#");
      if (hash < 0) return null;
      const location = rest.slice(0, hash);
      const field = rest.slice(hash + 1);
      const slash = location.indexOf("/");
      if (slash < 0 || !PART.test(location) || !PART.test(field) || !SEGMENTS_OK(location)) return null;
      return { kind, mount: location.slice(0, slash), path: location.slice(slash + 1), field };
    }
    case "vault-db": {
      const parts = rest.split("/");
      if (parts.length !== 2 || !PART.test(rest) || !SEGMENTS_OK(rest)) return null;
      return { kind, mount: parts[0]!, role: parts[1]! };
    }
    case "aws-sm": {
      const hash = rest.indexOf("#");
      const location = hash < 0 ? rest : rest.slice(0, hash);
      const field = hash < 0 ? null : rest.slice(hash + 1);
      const slash = location.indexOf("/");
      if (slash <= 0 || !PART.test(location) || (field !== null && !PART.test(field))) return null;
      const region = location.slice(0, slash);
      const name = location.slice(slash + 1);
      if (!AWS_REGION.test(region) || name === "") return null;
      return { kind, region, name, field };
    }
    case "gcp-sm": {
      const m = /^projects\/([^/]+)\/secrets\/([^/]+)(?:\/versions\/([^/]+))?$/.exec(rest);
      if (m === null || !PART.test(rest) || !SEGMENTS_OK(rest)) return null;
      return { kind, project: m[1]!, secret: m[2]!, version: m[3] ?? "latest" };
    }
    case "azure-kv": {
      const parts = rest.split("/");
      if (parts.length !== 2 || !PART.test(rest) || !SEGMENTS_OK(rest)) return null;
      return { kind, vault: parts[0]!, secret: parts[1]! };
    }
    case "cmd":
      if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(rest)) return null;
      return { kind, name: rest };
  }
}

/**
 * The store's display name: "HashiCorp Vault" (vault, vault-db), "AWS Secrets Manager", "Google Secret Manager",
 * "Azure Key Vault"; commands are named by their own name (`Secret command "<name>" is not configured`), so
 * for `cmd` this is the generic "Secret command".
 */
export function storeLabel(kind: StoreKind): string {
  switch (kind) {
    case "vault":
    case "vault-db":
      return "HashiCorp Vault";
    case "aws-sm":
      return "AWS Secrets Manager";
    case "gcp-sm":
      return "Google Secret Manager";
    case "azure-kv":
      return "Azure Key Vault";
    case "cmd":
      return "Secret command";
  }
}

/** The 400 message for a reference whose store is not configured on this instance. */
export function notConfiguredMessage(ref: StoreRef): string {
  return ref.kind === "cmd" ? `Secret command "${ref.name}" is not configured` : `${storeLabel(ref.kind)} is not configured`;
}
