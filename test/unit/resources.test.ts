// Granular resource scopes of a connection grant (docs/injection.md#resource-limits `resources` / `sessionPolicy` shapes, docs/injection.md#resource-limits
// resources guard), pure: validation of the provider-specific shape, the repository a GitHub request names,
// the repository check, the paths a Dropbox request names and the folder check.
import { describe, expect, test } from "bun:test";
import { checkFolders, checkRepositories, dropboxPaths, githubRepository, parseResources } from "../../src/core/resources.ts";

const repos = (list: unknown) => parseResources({ repositories: list }, "repositories", "github", "resources");
const folders = (list: unknown) => parseResources({ folders: list }, "folders", "dropbox", "resources");
const err = (message: string) => ({ ok: false as const, message });

describe("parseResources", () => {
  test("null, absent and {} are unrestricted (value null), whatever the provider", async () => {
    for (const kind of ["repositories", "folders", undefined] as const) {
      expect(parseResources(null, kind, "x", "resources")).toEqual({ ok: true, value: null });
      expect(parseResources(undefined, kind, "x", "resources")).toEqual({ ok: true, value: null });
      expect(parseResources({}, kind, "x", "sessionPolicy")).toEqual({ ok: true, value: null });
    }
  });

  test("a provider without a resource kind: `<field> is not supported for <provider>`", async () => {
    expect(parseResources({ repositories: ["a/b"] }, undefined, "resend", "resources")).toEqual(err("resources is not supported for resend"));
    expect(parseResources({ folders: ["/x"] }, undefined, "slack", "sessionPolicy")).toEqual(err("sessionPolicy is not supported for slack"));
  });

  test("not an object", async () => {
    for (const v of ["acme/api", 1, true, [], ["acme/api"]]) expect(parseResources(v, "repositories", "github", "resources")).toEqual(err("resources must be an object"));
    expect(parseResources("x", "folders", "dropbox", "sessionPolicy")).toEqual(err("sessionPolicy must be an object"));
  });

  test("unknown field, including the other provider's kind", async () => {
    expect(parseResources({ repositories: ["a/b"], branches: ["main"] }, "repositories", "github", "resources")).toEqual(err('resources has unknown field "branches"'));
    expect(parseResources({ folders: ["/x"] }, "repositories", "github", "resources")).toEqual(err('resources has unknown field "folders"'));
    expect(parseResources({ repositories: ["a/b"] }, "folders", "dropbox", "sessionPolicy")).toEqual(err('sessionPolicy has unknown field "repositories"'));
  });

  test("the list must be an array of strings", async () => {
    for (const v of ["acme/api", null, { 0: "acme/api" }, 3]) expect(repos(v)).toEqual(err("resources.repositories must be an array"));
    expect(folders("/Reports")).toEqual(err("resources.folders must be an array"));
    expect(repos(["acme/api", 7])).toEqual(err("resources.repositories[1] must be a string"));
    expect(folders([null])).toEqual(err("resources.folders[0] must be a string"));
  });

  test("repositories: 1-1000 items", async () => {
    expect(repos([])).toEqual(err("resources.repositories must have 1-1000 items"));
    const thousand = Array.from({ length: 1000 }, (_, i) => `org/repo-${i}`);
    expect(repos(thousand)).toEqual({ ok: true, value: { repositories: thousand } });
    expect(repos([...thousand, "org/one-more"])).toEqual(err("resources.repositories must have 1-1000 items"));
  });

  test("folders: 1-100 items", async () => {
    expect(folders([])).toEqual(err("resources.folders must have 1-100 items"));
    const hundred = Array.from({ length: 100 }, (_, i) => `/f${i}`);
    expect(folders(hundred)).toEqual({ ok: true, value: { folders: hundred } });
    expect(folders([...hundred, "/f100"])).toEqual(err("resources.folders must have 1-100 items"));
  });

  test("repositories look like owner/repo (letters, digits, _ . -), trimmed", async () => {
    expect(repos(["acme/api", "Acme-Inc/my_repo.js", " acme/web "])).toEqual({ ok: true, value: { repositories: ["acme/api", "Acme-Inc/my_repo.js", "acme/web"] } });
    for (const bad of ["acme", "acme/", "/api", "acme/api/issues", "acme api/x", "acme/*", "", "https://github.com/acme/api"]) {
      expect(repos(["ok/ok", bad])).toEqual(err("resources.repositories[1] must look like owner/repo"));
    }
  });

  test("folders are absolute paths of at most 1024 characters, trimmed", async () => {
    expect(folders(["/Reports", " /Team Docs/2024 ", "/"])).toEqual({ ok: true, value: { folders: ["/Reports", "/Team Docs/2024", "/"] } });
    for (const bad of ["Reports", "", "id:abc", "~/x"]) expect(folders([bad])).toEqual(err("resources.folders[0] must be an absolute path"));
    const max = `/${"a".repeat(1023)}`;
    expect(folders([max])).toEqual({ ok: true, value: { folders: [max] } });
    expect(folders(["/x", `${max}b`])).toEqual(err("resources.folders[1] must be at most 1024 characters"));
  });

  test("the legacy field name (sessionPolicy) is used in every message", async () => {
    expect(parseResources({ repositories: [] }, "repositories", "github", "sessionPolicy")).toEqual(err("sessionPolicy.repositories must have 1-1000 items"));
    expect(parseResources({ repositories: ["nope"] }, "repositories", "github", "sessionPolicy")).toEqual(err("sessionPolicy.repositories[0] must look like owner/repo"));
    expect(parseResources({ folders: ["rel"] }, "folders", "dropbox", "sessionPolicy")).toEqual(err("sessionPolicy.folders[0] must be an absolute path"));
    expect(parseResources({ repositories: ["a/b"] }, "repositories", "github", "sessionPolicy")).toEqual({ ok: true, value: { repositories: ["a/b"] } });
  });
});

describe("githubRepository", () => {
  test("api.github.com and uploads.github.com: /repos/{owner}/{repo}/…", async () => {
    expect(githubRepository("api.github.com", "/repos/acme/api/issues")).toBe("acme/api");
    expect(githubRepository("api.github.com", "/repos/acme/api")).toBe("acme/api");
    expect(githubRepository("api.github.com", "/repos/Acme/API/pulls/1/files")).toBe("Acme/API");
    expect(githubRepository("uploads.github.com", "/repos/acme/api/releases/7/assets")).toBe("acme/api");
    // Percent-encoded segments are decoded (GitHub decodes them too).
    expect(githubRepository("api.github.com", "/repos/acme/%61pi/issues")).toBe("acme/api");
  });

  test("api.github.com: paths naming no repository", async () => {
    for (const p of ["/user", "/user/repos", "/orgs/acme/repos", "/repos", "/repos/acme", "/repos/acme/", "/graphql", "/", "/search/issues"]) {
      expect(githubRepository("api.github.com", p)).toBeNull();
    }
  });

  test("github.com: /{owner}/{repo}[.git]/… (git smart HTTP and web paths)", async () => {
    expect(githubRepository("github.com", "/acme/api.git/info/refs")).toBe("acme/api");
    expect(githubRepository("github.com", "/acme/api.git/git-upload-pack")).toBe("acme/api");
    expect(githubRepository("github.com", "/acme/api.GIT/info/refs")).toBe("acme/api");
    expect(githubRepository("github.com", "/acme/api/archive/refs/heads/main.zip")).toBe("acme/api");
    expect(githubRepository("github.com", "/acme/api")).toBe("acme/api");
    expect(githubRepository("github.com", "/acme")).toBeNull();
    expect(githubRepository("github.com", "/")).toBeNull();
  });

  test("raw.githubusercontent.com: /{owner}/{repo}/{ref}/{file}", async () => {
    expect(githubRepository("raw.githubusercontent.com", "/acme/api/main/README.md")).toBe("acme/api");
    expect(githubRepository("raw.githubusercontent.com", "/acme")).toBeNull();
  });

  test("other hosts name no repository", async () => {
    expect(githubRepository("gitlab.com", "/acme/api.git/info/refs")).toBeNull();
    expect(githubRepository("api.github.com.evil.test", "/repos/acme/other")).toBeNull();
  });
});

describe("checkRepositories", () => {
  const allowed = ["acme/api", "Acme/Web"];

  test("an allowed repository passes, case-insensitively, on every GitHub host", async () => {
    expect(checkRepositories(allowed, "api.github.com", "GET", "/repos/acme/api/issues")).toEqual({ ok: true });
    expect(checkRepositories(allowed, "api.github.com", "GET", "/repos/ACME/API/issues")).toEqual({ ok: true });
    expect(checkRepositories(allowed, "api.github.com", "DELETE", "/repos/acme/web")).toEqual({ ok: true });
    expect(checkRepositories(allowed, "uploads.github.com", "POST", "/repos/acme/api/releases/1/assets")).toEqual({ ok: true });
    expect(checkRepositories(allowed, "github.com", "GET", "/ACME/Api.git/info/refs")).toEqual({ ok: true });
    expect(checkRepositories(allowed, "raw.githubusercontent.com", "GET", "/acme/web/main/index.html")).toEqual({ ok: true });
  });

  test("another repository is denied, named as the request spelled it", async () => {
    expect(checkRepositories(allowed, "api.github.com", "GET", "/repos/acme/other/issues")).toEqual({ ok: false, resource: "acme/other" });
    expect(checkRepositories(allowed, "api.github.com", "GET", "/repos/Other/API")).toEqual({ ok: false, resource: "Other/API" });
    expect(checkRepositories(allowed, "github.com", "GET", "/acme/other.git/info/refs")).toEqual({ ok: false, resource: "acme/other" });
    expect(checkRepositories(allowed, "raw.githubusercontent.com", "GET", "/acme/other/main/x")).toEqual({ ok: false, resource: "acme/other" });
    expect(checkRepositories(allowed, "uploads.github.com", "POST", "/repos/acme/apix/releases/1/assets")).toEqual({ ok: false, resource: "acme/apix" });
    // A prefix of an allowed name is not that name.
    expect(checkRepositories(allowed, "api.github.com", "GET", "/repos/acme/ap/issues")).toEqual({ ok: false, resource: "acme/ap" });
  });

  test("POST /graphql on api.github.com is denied (it can reach any repository)", async () => {
    expect(checkRepositories(allowed, "api.github.com", "POST", "/graphql")).toEqual({ ok: false, resource: "the GraphQL API" });
  });

  test("/repositories/{id}/… names a repository by id, which cannot be checked by name: denied; the /repositories listing passes", async () => {
    expect(checkRepositories(allowed, "api.github.com", "GET", "/repositories/1296269")).toEqual({ ok: false, resource: "repository id 1296269" });
    expect(checkRepositories(allowed, "api.github.com", "GET", "/repositories/1296269/issues")).toEqual({ ok: false, resource: "repository id 1296269" });
    expect(checkRepositories(allowed, "uploads.github.com", "POST", "/repositories/42/releases/1/assets")).toEqual({ ok: false, resource: "repository id 42" });
    expect(checkRepositories(allowed, "api.github.com", "GET", "/repositories")).toEqual({ ok: true });
  });

  test("requests naming no repository pass", async () => {
    for (const p of ["/user", "/user/repos", "/orgs/acme/members", "/rate_limit"]) expect(checkRepositories(allowed, "api.github.com", "GET", p)).toEqual({ ok: true });
    expect(checkRepositories(allowed, "github.com", "GET", "/acme")).toEqual({ ok: true });
  });
});

describe("dropboxPaths", () => {
  test("path, from_path and to_path of a JSON body", async () => {
    expect(dropboxPaths('{"path":"/Reports/q1.pdf","recursive":false}', null)).toEqual(["/Reports/q1.pdf"]);
    expect(dropboxPaths('{"from_path":"/Reports/a","to_path":"/Archive/a","autorename":true}', null)).toEqual(["/Reports/a", "/Archive/a"]);
    expect(dropboxPaths('{"path":""}', null)).toEqual([""]);
  });

  test("nested objects and arrays (batch entries, upload-session commits, search options)", async () => {
    expect(dropboxPaths('{"entries":[{"path":"/a"},{"path":"/b"}]}', null)).toEqual(["/a", "/b"]);
    expect(dropboxPaths('{"entries":[{"from_path":"/a","to_path":"/b"},{"from_path":"/c","to_path":"/d"}]}', null)).toEqual(["/a", "/b", "/c", "/d"]);
    expect(dropboxPaths('{"cursor":{"session_id":"s","offset":3},"commit":{"path":"/Up/x.bin","mode":"add"}}', null)).toEqual(["/Up/x.bin"]);
    expect(dropboxPaths('{"query":"q","options":{"path":"/Reports","max_results":5}}', null)).toEqual(["/Reports"]);
    expect(dropboxPaths('[{"path":"/top"}]', null)).toEqual(["/top"]);
  });

  test("the Dropbox-API-Arg header (content endpoints) is read with the body", async () => {
    expect(dropboxPaths(null, '{"path":"/Reports/q1.pdf"}')).toEqual(["/Reports/q1.pdf"]);
    expect(dropboxPaths('{"path":"/a"}', '{"path":"/b"}')).toEqual(["/a", "/b"]);
  });

  test("an unreadable Dropbox-API-Arg header → unreadable; a non-JSON body (file content) is not read", async () => {
    expect(dropboxPaths(null, "{not json")).toBe("unreadable");
    expect(dropboxPaths('{"path":"/a"}', "/Reports/x")).toBe("unreadable");
    expect(dropboxPaths("%PDF-1.7 binary", null)).toEqual([]);
    expect(dropboxPaths("%PDF-1.7 binary", '{"path":"/Up/x.pdf"}')).toEqual(["/Up/x.pdf"]);
  });

  test("no body, empty texts, fields that are not path strings: no paths", async () => {
    expect(dropboxPaths(null, null)).toEqual([]);
    expect(dropboxPaths("", "  ")).toEqual([]);
    expect(dropboxPaths('{"cursor":"abc","limit":10}', null)).toEqual([]);
    expect(dropboxPaths('{"path":42,"name":"/not-a-path-field"}', null)).toEqual([]);
    expect(dropboxPaths("null", null)).toEqual([]);
  });
});

describe("checkFolders", () => {
  test("at or below an allowed folder passes, case-insensitively", async () => {
    expect(checkFolders(["/Reports"], ["/Reports"])).toEqual({ ok: true });
    expect(checkFolders(["/Reports"], ["/Reports/"])).toEqual({ ok: true });
    expect(checkFolders(["/Reports"], ["/Reports/2024/q1.pdf"])).toEqual({ ok: true });
    expect(checkFolders(["/Reports"], ["/reports/Q1.PDF", "/REPORTS"])).toEqual({ ok: true });
    expect(checkFolders(["/reports/"], ["/Reports/x"])).toEqual({ ok: true });
    expect(checkFolders(["/Team Docs/2024"], ["/team docs/2024/plan.txt"])).toEqual({ ok: true });
    expect(checkFolders(["/Reports", "/Archive"], ["/Reports/a", "/Archive/a"])).toEqual({ ok: true });
  });

  test("a sibling with the same prefix, a parent or another folder is denied, named as sent", async () => {
    expect(checkFolders(["/Reports"], ["/Reports2"])).toEqual({ ok: false, resource: "/Reports2" });
    expect(checkFolders(["/Reports"], ["/Reports2/x.pdf"])).toEqual({ ok: false, resource: "/Reports2/x.pdf" });
    expect(checkFolders(["/Reports/2024"], ["/Reports"])).toEqual({ ok: false, resource: "/Reports" });
    expect(checkFolders(["/Reports"], ["/"])).toEqual({ ok: false, resource: "/" });
    // One path out of the allowed folders (from_path inside, to_path outside) denies the request.
    expect(checkFolders(["/Reports"], ["/Reports/a", "/Private/a"])).toEqual({ ok: false, resource: "/Private/a" });
  });

  test("the root \"\" is below only the root folder; it is reported as /", () => {
    expect(checkFolders(["/Reports"], [""])).toEqual({ ok: false, resource: "/" });
    expect(checkFolders(["/"], [""])).toEqual({ ok: true });
    expect(checkFolders(["/"], ["/anything/at/all"])).toEqual({ ok: true });
  });

  test("id:, rev: and ns: paths cannot be placed in a folder: denied (fail closed), even under the root", async () => {
    expect(checkFolders(["/Reports"], ["id:a4ayc_80_OEAAAAAAAAAXw"])).toEqual({ ok: false, resource: "id:a4ayc_80_OEAAAAAAAAAXw" });
    expect(checkFolders(["/"], ["id:a4ayc_80_OEAAAAAAAAAXw"])).toEqual({ ok: false, resource: "id:a4ayc_80_OEAAAAAAAAAXw" });
    expect(checkFolders(["/Reports"], ["rev:a1c10ce0dd78"])).toEqual({ ok: false, resource: "rev:a1c10ce0dd78" });
    expect(checkFolders(["/"], ["ns:1234/Reports"])).toEqual({ ok: false, resource: "ns:1234/Reports" });
  });

  test("unreadable → denied as `this request`; no paths → ok", async () => {
    expect(checkFolders(["/Reports"], "unreadable")).toEqual({ ok: false, resource: "this request" });
    expect(checkFolders(["/Reports"], [])).toEqual({ ok: true });
  });

  test("end to end over a body and a header", async () => {
    const allowed = ["/Reports"];
    expect(checkFolders(allowed, dropboxPaths('{"entries":[{"path":"/Reports/a"},{"path":"/reports/b"}]}', null))).toEqual({ ok: true });
    expect(checkFolders(allowed, dropboxPaths('{"entries":[{"path":"/Reports/a"},{"path":"/Other/b"}]}', null))).toEqual({ ok: false, resource: "/Other/b" });
    expect(checkFolders(allowed, dropboxPaths(null, '{"path":"/Reports2/x"}'))).toEqual({ ok: false, resource: "/Reports2/x" });
    expect(checkFolders(allowed, dropboxPaths(null, "garbage"))).toEqual({ ok: false, resource: "this request" });
  });
});

describe("dropbox folders: dot segments", () => {
  test("a path with . or .. segments never counts as inside a folder", async () => {
    expect(checkFolders(["/Reports"], ["/Reports/../Private/x"]).ok).toBe(false);
    expect(checkFolders(["/Reports"], ["/Reports/./a"]).ok).toBe(false);
    expect(checkFolders(["/"], ["/a/../b"]).ok).toBe(false);
    expect(checkFolders(["/Reports"], ["/Reports/..hidden/a"]).ok).toBe(true);
  });
});
