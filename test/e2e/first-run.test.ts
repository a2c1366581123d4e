// First run and operator safety (issue 17), through the real `credgate` process: a data dir and its master key
// stay together (a lost or wrong key is refused, and nothing is written), the first-start keys are printed by
// the first start that serves, and a data dir that cannot be used gets one line saying what to do.
import { afterAll, describe, expect, test } from "bun:test";
import { spawn } from "bun";
import { Database } from "bun:sqlite";
import { createHash, randomBytes } from "node:crypto";
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { freePort } from "../support/ports.ts";
import { credgateCommand, startCredgate, type RunningCredgate } from "../support/process.ts";
import { tempDir } from "../support/tmp.ts";

const NOBODY = 65534;
const running: RunningCredgate[] = [];
afterAll(async () => {
  await Promise.all(running.map((c) => c.stop()));
});

async function start(dataDir: string, env: Record<string, string> = {}): Promise<RunningCredgate> {
  const c = await startCredgate({ dataDir, env });
  running.push(c);
  return c;
}

/** Runs the CLI to its exit (killed after 15 s); `as` runs it as another user (runuser), like a non-root operator. */
async function cli(args: string[], opts: { env?: Record<string, string>; as?: string } = {}) {
  const command = opts.as ? ["runuser", "-u", opts.as, "--", ...credgateCommand(), ...args] : [...credgateCommand(), ...args];
  const proc = spawn(command, { env: { ...process.env, ...opts.env }, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const timer = setTimeout(() => proc.kill("SIGKILL"), 15_000);
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  clearTimeout(timer);
  return { code, stdout, stderr };
}

async function serveArgs(dataDir: string, apiPort?: number): Promise<string[]> {
  return ["serve", "--data-dir", dataDir, "--port", String(apiPort ?? (await freePort())), "--gateway-port", String(await freePort()), "--host", "127.0.0.1"];
}

/** Every file of the data dir with its content hash and mode: what "writes nothing" is checked against. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    const st = statSync(p);
    out[name] = `${(st.mode & 0o7777).toString(8)} ${st.isFile() ? createHash("sha256").update(readFileSync(p)).digest("hex") : "dir"}`;
  }
  return out;
}

/** A data dir with data in it (a secret), the server stopped again. */
async function dataDirWithData(): Promise<{ dir: string; keys: RunningCredgate["keys"]; secretId: string }> {
  // In a parent of the test's own: some tests open the parent to other users, which must never be /tmp itself.
  const dir = join(tempDir(), "data");
  const c = await start(dir);
  const secret = await c.api("POST", "/v1/secrets", { body: { name: "kept", type: "llm_a", value: "sk-ant-api03-kept-value" } });
  expect(secret.status).toBe(201);
  expect(await c.stop()).toBe(0);
  return { dir, keys: c.keys, secretId: secret.body.id };
}

/** The one line every refused start gets: exit 1, nothing on stdout, no errno codes, no stack. */
function expectOneLine(r: { code: number; stdout: string; stderr: string }, line: string) {
  expect(r.stderr).toBe(`credgate: ${line}\n`);
  expect(r.code).toBe(1);
  expect(r.stdout).toBe("");
}

describe("a data dir and its master key stay together", () => {
  const mismatch = (dir: string) => `master key does not match the data in ${dir}: restore ${dir}/master.key or set CREDGATE_MASTER_KEY`;

  test("master.key deleted: serve and keys refuse with one line and write nothing; restoring the file brings everything back", async () => {
    const { dir, keys, secretId } = await dataDirWithData();
    const key = readFileSync(join(dir, "master.key"));
    rmSync(join(dir, "master.key"));
    const before = snapshot(dir);

    expectOneLine(await cli(await serveArgs(dir)), mismatch(dir));
    expect(snapshot(dir)).toEqual(before);
    expect(existsSync(join(dir, "master.key"))).toBe(false);
    expectOneLine(await cli(["keys", "--data-dir", dir, "--json"]), mismatch(dir));
    expect(snapshot(dir)).toEqual(before);

    writeFileSync(join(dir, "master.key"), key, { mode: 0o600 });
    const again = await start(dir);
    expect(again.keys).toEqual(keys);
    expect((await again.api("GET", `/v1/secrets/${secretId}`)).status).toBe(200);
  });

  test("a wrong CREDGATE_MASTER_KEY is refused the same way; the right one in the environment works", async () => {
    const { dir, keys } = await dataDirWithData();
    const before = snapshot(dir);
    const wrong = { CREDGATE_MASTER_KEY: randomBytes(32).toString("base64") };
    expectOneLine(await cli(await serveArgs(dir), { env: wrong }), mismatch(dir));
    expectOneLine(await cli(["keys", "--data-dir", dir], { env: wrong }), mismatch(dir));
    expect(snapshot(dir)).toEqual(before);

    const right = { CREDGATE_MASTER_KEY: readFileSync(join(dir, "master.key"), "utf8").trim() };
    rmSync(join(dir, "master.key"));
    const c = await start(dir, right);
    expect(c.keys).toEqual(keys);
    expect(existsSync(join(dir, "master.key"))).toBe(false);
  });

  test("a data dir from before the check value: the key is proved by the stored data, and the check is added", async () => {
    const { dir, keys } = await dataDirWithData();
    const db = new Database(join(dir, "credgate.db"));
    expect(db.query("DELETE FROM settings WHERE key = 'master_key_check'").run().changes).toBe(1);
    db.close();
    const key = readFileSync(join(dir, "master.key"));
    writeFileSync(join(dir, "master.key"), randomBytes(32).toString("base64") + "\n");
    const before = snapshot(dir);
    expectOneLine(await cli(await serveArgs(dir)), mismatch(dir));
    expect(snapshot(dir)).toEqual(before);

    writeFileSync(join(dir, "master.key"), key);
    const c = await start(dir);
    expect(c.keys).toEqual(keys);
    expect(await c.stop()).toBe(0);
    const after = new Database(join(dir, "credgate.db"), { readonly: true });
    expect(after.query("SELECT count(*) AS n FROM settings WHERE key = 'master_key_check'").get()).toEqual({ n: 1 });
    after.close();
  });

  test("`credgate keys` on a missing or empty data dir says there is nothing there and creates nothing", async () => {
    const parent = tempDir();
    const missing = join(parent, "nothing-here");
    expectOneLine(await cli(["keys", "--data-dir", missing]), `no credgate data in ${missing}: start the server on it first, or pass the --data-dir the server uses`);
    expect(readdirSync(parent)).toEqual([]);
    const empty = tempDir();
    expectOneLine(await cli(["keys", "--data-dir", empty, "--json"]), `no credgate data in ${empty}: start the server on it first, or pass the --data-dir the server uses`);
    expect(readdirSync(empty)).toEqual([]);
  });

  test("a data dir holding only a master.key (no database yet) keeps that key", async () => {
    const dir = tempDir();
    const key = randomBytes(32).toString("base64") + "\n";
    writeFileSync(join(dir, "master.key"), key, { mode: 0o600 });
    const c = await start(dir);
    expect(await c.stop()).toBe(0);
    expect(readFileSync(join(dir, "master.key"), "utf8")).toBe(key);
  });
});

describe("the first-start keys cannot be lost", () => {
  async function blockedPort(): Promise<{ port: number; blocker: Server }> {
    const blocker = createServer((s) => s.destroy());
    const port = await new Promise<number>((resolve) => blocker.listen(0, "127.0.0.1", () => resolve((blocker.address() as { port: number }).port)));
    return { port, blocker };
  }

  test("a first start whose API port is taken prints no keys; the next start that serves prints them, once", async () => {
    const dir = tempDir();
    const { port, blocker } = await blockedPort();
    let failed;
    try {
      failed = await cli(await serveArgs(dir, port));
    } finally {
      blocker.close();
    }
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain(`cannot listen on 127.0.0.1:${port} (API)`);
    expect(failed.stdout).not.toContain("svc_");

    const served = await start(dir);
    const keys = served.keys;
    const banner = served.output();
    expect(banner).toContain(`Project API key:       ${keys.projectApiKey}`);
    expect(banner).toContain(`Organization API key:  ${keys.orgApiKey}`);
    expect(banner).toContain(`Default agent token:   ${keys.defaultAgentToken}`);
    expect(banner.split(keys.projectApiKey).length - 1).toBe(1);
    // The dashboard's address beside the keys, and it serves the dashboard there.
    const dashboardUrl = `http://localhost:${served.apiPort}/`;
    expect(banner).toContain(`Dashboard: ${dashboardUrl}  (sign in with the organization API key)`);
    const page = await fetch(`http://127.0.0.1:${served.apiPort}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<div id="app"');
    expect(await served.stop()).toBe(0);

    const third = await start(dir);
    expect(third.keys).toEqual(keys);
    expect(await third.stop()).toBe(0);
    expect(third.output()).toContain("credgate started");
    expect(third.output()).not.toContain(keys.projectApiKey);
  });

  test("the same when the gateway port is taken", async () => {
    const dir = tempDir();
    const { port, blocker } = await blockedPort();
    let failed;
    try {
      failed = await cli(["serve", "--data-dir", dir, "--port", String(await freePort()), "--gateway-port", String(port), "--host", "127.0.0.1"]);
    } finally {
      blocker.close();
    }
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain(`cannot listen on 127.0.0.1:${port} (gateway)`);
    expect(failed.stdout).not.toContain("svc_");
    const served = await start(dir);
    expect(served.output()).toContain(`Project API key:       ${served.keys.projectApiKey}`);
  });
});

describe("a data dir that cannot be used: one line saying what is wrong and what to do", () => {
  /** A directory tree `nobody` can reach (tempDir is 0700 root). */
  function reachableDir(): string {
    const d = tempDir();
    chmodSync(d, 0o755);
    return d;
  }

  /** Runs `serve` as nobody and checks the one line: no errno code, no stack, nothing created. */
  async function refusedAsNobody(dataDir: string, line: string) {
    const r = await cli(await serveArgs(dataDir), { as: "nobody" });
    expectOneLine(r, line);
    expect(r.stderr).not.toMatch(/EPERM|EACCES|EEXIST|ENOTDIR|\n\s+at /);
  }

  test("a file given as the data dir", async () => {
    const file = join(reachableDir(), "data");
    writeFileSync(file, "not a directory\n");
    chownSync(file, NOBODY, NOBODY);
    await refusedAsNobody(file, `data dir ${file} is a file, not a directory: pass --data-dir (or CREDGATE_DATA_DIR) with a directory path`);
    expect(readFileSync(file, "utf8")).toBe("not a directory\n");
    const below = join(file, "sub");
    await refusedAsNobody(below, `data dir ${below} cannot be created: ${file} is a file, not a directory; pass --data-dir with a directory path`);
  });

  test("a data dir owned by another user (a Docker bind mount)", async () => {
    const dir = join(reachableDir(), "data");
    mkdirSync(dir, { mode: 0o755 });
    chownSync(dir, 4242, 4242);
    await refusedAsNobody(
      dir,
      `data dir ${dir} is not writable: it belongs to uid 4242 and credgate runs as uid ${NOBODY}: give the data dir to this user (chown -R ${NOBODY} ${dir}) or run credgate as uid 4242`,
    );
    expect(readdirSync(dir)).toEqual([]);
  });

  test("a data dir its owner cannot write", async () => {
    const dir = join(reachableDir(), "data");
    mkdirSync(dir);
    chmodSync(dir, 0o500);
    chownSync(dir, NOBODY, NOBODY);
    await refusedAsNobody(dir, `data dir ${dir} is not writable: its mode is 0500: make it readable and writable by its owner (chmod -R u+rwX ${dir})`);
  });

  test("a missing data dir in a directory this user cannot write", async () => {
    const parent = reachableDir();
    const dir = join(parent, "data");
    await refusedAsNobody(dir, `data dir ${dir} cannot be created: uid ${NOBODY} may not write ${parent}; create the directory and give it to this user, or pass --data-dir with a writable path`);
    expect(existsSync(dir)).toBe(false);
  });

  test("a data dir whose files belong to another user (an earlier start as root)", async () => {
    const { dir } = await dataDirWithData();
    chmodSync(join(dir, ".."), 0o755);
    chownSync(dir, NOBODY, NOBODY);
    const before = snapshot(dir);
    await refusedAsNobody(
      dir,
      `${dir}/master.key cannot be read and written: it belongs to uid 0 and credgate runs as uid ${NOBODY}: give the data dir to this user (chown -R ${NOBODY} ${dir}) or run credgate as uid 0`,
    );
    expect(snapshot(dir)).toEqual(before);
  });

  test("the same data dir given to that user works, keys and all", async () => {
    const { dir, keys } = await dataDirWithData();
    chmodSync(join(dir, ".."), 0o755);
    for (const name of ["", ...readdirSync(dir)]) chownSync(join(dir, name), NOBODY, NOBODY);
    const r = await cli(["keys", "--data-dir", dir, "--json"], { as: "nobody" });
    expect(r.stderr).toBe("");
    expect(JSON.parse(r.stdout)).toEqual(keys);
  });
});

describe("a value that cannot go into a header is refused when stored", () => {
  test("a token pasted with a typographic ellipsis: 400 naming value, on create and on update; a clean value is accepted", async () => {
    const c = await start(tempDir());
    const body = { name: "GitHub", type: "generic", value: "ghp_abc\u2026", hostPattern: "api.github.com", injectionConfig: { headerName: "authorization", valueFormat: "Bearer {value}" } };
    const refused = await c.api("POST", "/v1/secrets", { body });
    expect(refused.status).toBe(400);
    expect(refused.text).toBe('{"error":"value must contain only printable ASCII characters when injected into a header"}');
    const created = await c.api("POST", "/v1/secrets", { body: { ...body, value: "ghp_abc123" } });
    expect(created.status).toBe(201);
    const update = await c.api("PATCH", `/v1/secrets/${created.body.id}`, { body: { value: "ghp_abc\r\nX-Injected: 1" } });
    expect(update.status).toBe(400);
    expect(update.text).toBe('{"error":"value must contain only printable ASCII characters when injected into a header"}');
    const llm = await c.api("POST", "/v1/secrets", { body: { name: "Claude", type: "llm_a", value: "sk-ant-api03-\u2026" } });
    expect(llm.status).toBe(400);
    expect(llm.text).toBe('{"error":"value must contain only printable ASCII characters when injected into a header"}');
  });
});

describe("small things users hit", () => {
  test("an unknown command prints `unknown command` and the help, exit 1", async () => {
    const r = await cli(["frobnicate"]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr.startsWith("credgate: unknown command 'frobnicate'\n\nUsage: credgate [options] [command]\n")).toBe(true);
    for (const command of ["serve", "keys", "run", "migrate"]) expect(r.stderr).toContain(`  ${command} `);
    expect(r.stderr).not.toContain("serve'");
  });

  /** Every process below `pid` (from /proc), depth first. */
  function descendants(pid: number): number[] {
    let children: number[] = [];
    try {
      children = readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number);
    } catch {}
    return children.flatMap((c) => [c, ...descendants(c)]);
  }
  const alive = (pid: number) => existsSync(`/proc/${pid}`) && !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, "utf8"));

  test.each(["SIGTERM", "SIGINT"] as const)("`npm start` stopped with %s: the server stops, the port is released, no process is left", async (signal) => {
    const dataDir = tempDir();
    const apiPort = await freePort();
    const npm = spawn(["npm", "start", "--", ...(await serveArgs(dataDir, apiPort)).slice(1)], {
      cwd: join(import.meta.dir, "../.."),
      env: process.env,
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    });
    const output = Promise.all([new Response(npm.stdout).text(), new Response(npm.stderr).text()]);
    const deadline = Date.now() + 20_000;
    let up = false;
    while (!up && Date.now() < deadline && npm.exitCode === null) {
      up = await fetch(`http://127.0.0.1:${apiPort}/v1/health`).then((r) => r.ok, () => false);
      if (!up) await Bun.sleep(100);
    }
    expect(up).toBe(true);
    const below = descendants(npm.pid);
    expect(below.length).toBeGreaterThan(0);
    let code: number | "hung";
    let left: number[];
    try {
      npm.kill(signal);
      code = await Promise.race([npm.exited, Bun.sleep(15_000).then(() => "hung" as const)]);
    } finally {
      // Whatever is left is an orphan of this test: record it, then end it so it does not outlive the suite.
      left = below.filter(alive);
      for (const pid of [...left, npm.pid]) if (alive(pid)) process.kill(pid, "SIGKILL");
    }
    expect(left).toEqual([]);
    expect(code).toBe(0);
    const [stdout] = await output;
    expect(stdout).toContain(`"msg":"credgate stopping","signal":"${signal}"`);
    expect(await fetch(`http://127.0.0.1:${apiPort}/v1/health`).then(() => "open", () => "closed")).toBe("closed");
  }, 40_000);
});
