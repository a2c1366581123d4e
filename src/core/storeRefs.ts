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
  return parsed ?? STORE_SHAPE_MESSAGES[kind];
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
      if (!/^[a-z]{2}(-[a-z]+)+-\d+$/.test(region) || name === "") return null;
      return { kind, region, name, field };
    }
    case "gcp-sm": {
      const m = /^projects\/([^/]+)\/secrets\/([^/]+)(?:\/versions\/([^/]+))?$/.exec(rest);
      if (m === null || !PART.test(rest)) return null;
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
