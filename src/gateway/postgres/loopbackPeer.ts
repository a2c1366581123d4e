// Whether a client connected from this machine (docs/databases.md#the-listener): the agent token is a password,
// so without TLS it is asked only of a peer whose address is in 127.0.0.0/8, ::1 or ::ffff:127.0.0.0/104 —
// traffic that never leaves the host.
export function isLoopbackPeer(address: string | null | undefined): boolean {
  if (!address) return false;
  const a = address.toLowerCase();
  if (a === "::1" || a === "0:0:0:0:0:0:0:1") return true;
  const v4 = a.startsWith("::ffff:") ? a.slice(7) : a;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(v4);
}
