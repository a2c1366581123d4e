// The resources guard (docs/injection.md#app-connections): a grant limited to some GitHub repositories or
// Dropbox folders lets through only requests that name one of them (requests naming none pass; GitHub GraphQL
// is denied).
import { checkFolders, checkRepositories, dropboxPaths, type GuardVerdict, type ResourceKind } from "../../core/resources.ts";
import { gatewayJson } from "../errors.ts";
import type { ProxyRequest } from "../request.ts";
import type { CompiledConnection } from "../snapshot.ts";
import { answer, PASS, type RequestVerdict, type Stage } from "../stage.ts";

/** Dropbox's content endpoints: the body is file content, the arguments travel in the header or `arg`. */
const DROPBOX_CONTENT_HOST = "content.dropboxapi.com";
/** The most of an RPC body read for its arguments; a larger body cannot be checked and is denied. */
export const DROPBOX_ARGS_LIMIT = 1024 * 1024;

export function resourcesStage(): Stage {
  return {
    name: "resources",
    reads: ["connection"],
    provides: [],
    request(rq) {
      const connection = rq.connection;
      const resources = connection?.grant?.resources;
      const kind = connection?.app.app.resources;
      if (!connection || !resources || !kind) return PASS;
      const allowed = resources[kind];
      // Synchronous without a resource limit: no promise on most requests' path.
      return allowed ? guard(rq, connection, kind, allowed) : PASS;
    },
  };
}

async function guard(rq: ProxyRequest, connection: CompiledConnection, kind: ResourceKind, allowed: string[]): Promise<RequestVerdict> {
  const method = rq.websocket ? "GET" : rq.method;
  const verdict: GuardVerdict =
    kind === "repositories" ? repositoriesOfEveryReading(allowed, rq.host, method, rq.pathReadings) : checkFolders(allowed, await dropboxRequestPaths(rq));
  if (verdict.ok) return PASS;
  return answer(
    "blocked",
    gatewayJson(403, {
      error: "resource_access_denied",
      message: `This ${connection.displayName} connection is limited to specific ${kind}; ${verdict.resource} is not one of them.`,
      provider: connection.provider,
      allowed,
    }),
  );
}

/** The allowed repositories grant access, so every reading of the path must name an allowed one or none (docs/injection.md#every-reading-of-a-path). */
function repositoriesOfEveryReading(allowed: string[], host: string, method: string, readings: readonly string[]): GuardVerdict {
  for (const path of readings) {
    const verdict = checkRepositories(allowed, host, method, path);
    if (!verdict.ok) return verdict;
  }
  return { ok: true };
}

/**
 * Every path a Dropbox request names. Arguments are JSON in the RPC body (whatever its content type: Dropbox
 * also reads `text/plain; charset=dropbox-cors-hack`), in the `Dropbox-API-Arg` header or in the `arg` URL
 * parameter. What cannot be read in full, and a path root other than home (it re-roots every path), is
 * "unreadable" (denied).
 */
async function dropboxRequestPaths(rq: ProxyRequest): Promise<string[] | "unreadable"> {
  const pathRoot = rq.agentHeaders.get("dropbox-api-path-root");
  if (pathRoot !== null && !isHomeRoot(pathRoot)) return "unreadable";
  const args: string[] = [];
  const header = rq.agentHeaders.get("dropbox-api-arg");
  if (header !== null) args.push(header);
  const q = rq.target.indexOf("?");
  if (q >= 0) args.push(...new URLSearchParams(rq.target.slice(q + 1)).getAll("arg"));
  if (rq.body && rq.host !== DROPBOX_CONTENT_HOST) {
    const head = await rq.peekBody(DROPBOX_ARGS_LIMIT + 1);
    if (head.byteLength > DROPBOX_ARGS_LIMIT) return "unreadable";
    args.push(new TextDecoder().decode(head));
  }
  const out: string[] = [];
  for (const text of args) {
    // Parsed as an argument: unreadable JSON is "unreadable", never skipped.
    const paths = dropboxPaths(null, text);
    if (paths === "unreadable") return paths;
    out.push(...paths);
  }
  return out;
}

function isHomeRoot(value: string): boolean {
  try {
    const v = JSON.parse(value) as unknown;
    return v === "home" || (typeof v === "object" && v !== null && (v as Record<string, unknown>)[".tag"] === "home");
  } catch {
    return false;
  }
}
