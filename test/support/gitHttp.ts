// A git smart-HTTP remote for an upstream of the tests: a bare repository with one commit, served by the
// real `git http-backend` (CGI), so `git clone` through the gateway is the real protocol end to end.
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { UpstreamHandler } from "./upstream.ts";
import { tempDir } from "./tmp.ts";

export interface GitRemote {
  /** Directory holding `<name>.git`. */
  root: string;
  name: string;
  /** The file committed, and its content. */
  file: { path: string; content: string };
  handler: UpstreamHandler;
}

function git(args: string[], cwd: string): void {
  const r = spawnSync("git", args, { cwd, encoding: "utf8", env: { ...process.env, GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@t", GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@t" } });
  if (r.status !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr}`);
}

/** Answers `/<name>.git/…` with git http-backend; anything else falls through to the upstream's echo. */
export function makeGitRemote(name = "repo"): GitRemote {
  const root = tempDir("credgate-git-");
  const work = join(root, "work");
  const file = { path: "README.md", content: `cloned through credgate ${crypto.randomUUID()}\n` };
  git(["init", "-q", "-b", "main", work], root);
  writeFileSync(join(work, file.path), file.content);
  git(["add", "."], work);
  git(["commit", "-q", "-m", "first"], work);
  git(["clone", "-q", "--bare", work, join(root, `${name}.git`)], root);

  const handler: UpstreamHandler = (req) => (new URL(req.url).pathname.startsWith(`/${name}.git/`) ? backend(req) : undefined);
  const backend = async (req: Request): Promise<Response> => {
    const url = new URL(req.url);
    const body = new Uint8Array(await req.arrayBuffer());
    const proc = Bun.spawn(["git", "http-backend"], {
      env: {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        GIT_PROJECT_ROOT: root,
        GIT_HTTP_EXPORT_ALL: "1",
        REQUEST_METHOD: req.method,
        PATH_INFO: url.pathname,
        QUERY_STRING: url.search.slice(1),
        CONTENT_TYPE: req.headers.get("content-type") ?? "",
        CONTENT_LENGTH: String(body.byteLength),
        GIT_PROTOCOL: req.headers.get("git-protocol") ?? "",
        REMOTE_ADDR: "127.0.0.1",
      },
      stdin: body,
      stdout: "pipe",
      stderr: "pipe",
    });
    const out = Buffer.from(await new Response(proc.stdout).arrayBuffer());
    await proc.exited;
    // CGI output: header lines, a blank line, the body.
    const split = out.indexOf("\r\n\r\n") >= 0 ? out.indexOf("\r\n\r\n") : out.indexOf("\n\n");
    const sep = out.indexOf("\r\n\r\n") >= 0 ? 4 : 2;
    const headers = new Headers();
    let status = 200;
    for (const line of out.subarray(0, split).toString("latin1").split(/\r?\n/)) {
      const colon = line.indexOf(":");
      if (colon < 0) continue;
      const key = line.slice(0, colon).trim();
      const value = line.slice(colon + 1).trim();
      if (key.toLowerCase() === "status") status = Number.parseInt(value, 10);
      else headers.append(key, value);
    }
    return new Response(out.subarray(split + sep), { status, headers });
  };
  return { root, name, file, handler };
}
