// The agent's ssh under `credgate run` (docs/ssh.md#the-agent-side): an ssh config whose ProxyCommand is
// `credgate tunnel %h %p`, a known_hosts of its own holding only credgate's `@cert-authority` line, and no key
// or ssh-agent offered (the agent holds none: credgate logs in upstream). GIT_SSH_COMMAND points git at it.
import { join } from "node:path";

/** How this executable runs itself: the compiled binary, or bun with the entry script from source. */
export function selfCommand(): string[] {
  return Bun.main.startsWith("/$bunfs/") ? [process.execPath] : [process.execPath, Bun.main];
}

const quote = (s: string) => `"${s.replace(/(["\\])/g, "\\$1")}"`;

export function sshConfigText(dir: string, self: string[]): string {
  return [
    "Host *",
    `  ProxyCommand ${self.map(quote).join(" ")} tunnel %h %p`,
    `  UserKnownHostsFile ${quote(join(dir, "known_hosts"))}`,
    "  GlobalKnownHostsFile /dev/null",
    "  StrictHostKeyChecking yes",
    "  IdentitiesOnly yes",
    "  IdentityFile none",
    "  IdentityAgent none",
    "  ForwardAgent no",
    "  BatchMode yes",
    "",
  ].join("\n");
}

/** The files `run` writes (ssh_config, known_hosts) and the variable it sets. */
export function sshFiles(dir: string, caLine: string, self: string[] = selfCommand()): { files: Record<string, string>; env: Record<string, string> } {
  const config = join(dir, "ssh_config");
  return {
    files: { [config]: sshConfigText(dir, self), [join(dir, "known_hosts")]: `${caLine.trim()}\n` },
    env: { GIT_SSH_COMMAND: `ssh -F ${quote(config)}`, CREDGATE_SSH_CONFIG: config },
  };
}
