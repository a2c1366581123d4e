// The agent's side of SSH as `credgate run` writes it (src/run/sshConfig.ts, docs/ssh.md): an ssh_config and known
// hosts trusting credgate's SSH CA and `credgate tunnel` as the ProxyCommand, in a new directory that is also HOME,
// with the default agent's proxy in HTTPS_PROXY for the tunnel — so ssh and git run as an agent's would.
import { writeFileSync } from "node:fs";
import { sshFiles } from "../../src/run/sshConfig.ts";
import { credgateCommand, type RunningCredgate } from "./process.ts";
import { tempDir } from "./tmp.ts";

export async function writeAgentSsh(cg: RunningCredgate): Promise<{ dir: string; env: Record<string, string> }> {
  const dir = tempDir("credgate-agent-");
  const caLine = await (await fetch(`${cg.apiUrl}/v1/gateway/ssh-ca`)).text();
  const files = sshFiles(dir, caLine, credgateCommand());
  for (const [f, text] of Object.entries(files.files)) writeFileSync(f, text);
  return { dir, env: { ...files.env, HTTPS_PROXY: `http://x:${cg.keys.defaultAgentToken}@127.0.0.1:${cg.gatewayPort}`, HOME: dir, GIT_TERMINAL_PROMPT: "0" } };
}
