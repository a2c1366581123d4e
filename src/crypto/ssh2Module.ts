// The `ssh2` package, loaded the first time SSH is used rather than when the process starts: loaded at start it
// raised the gateway's peak memory under plain HTTPS load from 124 MB to 181–187 MB (the peer benchmark,
// bench/README.md), for every user, SSH or not.
import type * as Ssh2 from "ssh2";

let loaded: typeof Ssh2 | null = null;

export function ssh2(): typeof Ssh2 {
  loaded ??= require("ssh2") as typeof Ssh2;
  return loaded;
}
