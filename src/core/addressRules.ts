// The egress guard's address rules (docs/guards.md#egress-guard): which addresses the gateway may dial. Addresses are
// normalised first (IPv4 in decimal, octal or hex forms, IPv4-mapped IPv6, brackets), then judged: an explicit
// deny beats everything, an explicit allow beats the default refusals; link-local, unspecified, multicast and
// broadcast are always refused by default, and in cloud mode loopback and private ranges too.

export interface Cidr {
  v6: boolean;
  /** The network address as a 128-bit value (IPv4 in the low 32 bits). */
  bits: bigint;
  prefix: number;
  text: string;
}

/** IPv4 as inet_aton reads it: 1–4 parts, each decimal, octal (leading 0) or hex (0x). */
function parseIPv4(s: string): bigint | null {
  const parts = s.split(".");
  if (parts.length < 1 || parts.length > 4 || parts.some((p) => p === "")) return null;
  const nums: number[] = [];
  for (const p of parts) {
    let n: number;
    if (/^0x[0-9a-f]*$/i.test(p)) n = p.length === 2 ? 0 : parseInt(p.slice(2), 16);
    else if (/^0[0-7]*$/.test(p)) n = parseInt(p, 8);
    else if (/^[1-9][0-9]*$/.test(p)) n = parseInt(p, 10);
    else return null;
    if (!Number.isFinite(n)) return null;
    nums.push(n);
  }
  const last = nums.pop()!;
  if (nums.some((n) => n > 255) || last >= 2 ** (8 * (4 - nums.length))) return null;
  let v = 0n;
  nums.forEach((n, i) => (v |= BigInt(n) << BigInt(24 - 8 * i)));
  return v | BigInt(last);
}

function parseIPv6(s: string): bigint | null {
  let text = s;
  let tail: bigint | null = null;
  // An embedded dotted IPv4 in the last 32 bits (::ffff:1.2.3.4).
  const lastColon = text.lastIndexOf(":");
  if (text.slice(lastColon + 1).includes(".")) {
    const v4 = /^\d{1,3}(\.\d{1,3}){3}$/.test(text.slice(lastColon + 1)) ? parseIPv4(text.slice(lastColon + 1)) : null;
    if (v4 === null) return null;
    tail = v4;
    text = `${text.slice(0, lastColon + 1)}0:0`;
  }
  const halves = text.split("::");
  if (halves.length > 2) return null;
  const groups = (h: string) => (h === "" ? [] : h.split(":"));
  const head = groups(halves[0]!);
  const rest = halves.length === 2 ? groups(halves[1]!) : [];
  const missing = 8 - head.length - rest.length;
  if ((halves.length === 1 && missing !== 0) || (halves.length === 2 && missing < 1)) return null;
  const all = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill("0"), ...rest];
  let v = 0n;
  for (const g of all) {
    if (!/^[0-9a-f]{1,4}$/i.test(g)) return null;
    v = (v << 16n) | BigInt(parseInt(g, 16));
  }
  if (tail !== null) v = (v & ~0xffffffffn) | tail;
  return v;
}

export interface Address {
  v6: boolean;
  bits: bigint;
  /** The canonical text: dotted IPv4, or IPv6 as the WHATWG URL parser prints it. */
  text: string;
}

function ipv4Text(v: bigint): string {
  return [24n, 16n, 8n, 0n].map((s) => String((v >> s) & 0xffn)).join(".");
}

/** An IP literal in any of the forms a URL or socket API accepts, normalised; null when it is not one. */
export function parseAddress(input: string): Address | null {
  const s = input.trim().replace(/^\[|\]$/g, "").replace(/%.*$/, "");
  if (s.includes(":")) {
    const v = parseIPv6(s);
    if (v === null) return null;
    // IPv4-mapped IPv6 is the IPv4 address it carries.
    if (v >> 32n === 0xffffn) return { v6: false, bits: v & 0xffffffffn, text: ipv4Text(v & 0xffffffffn) };
    return { v6: true, bits: v, text: new URL(`http://[${s}]/`).hostname.slice(1, -1) };
  }
  if (!/^[0-9a-fx.]+$/i.test(s)) return null;
  const v = parseIPv4(s);
  return v === null ? null : { v6: false, bits: v, text: ipv4Text(v) };
}

export function parseCidr(text: string): Cidr | null {
  const [addr, prefixText] = text.trim().split("/");
  const a = addr ? parseAddress(addr) : null;
  if (!a) return null;
  const max = a.v6 ? 128 : 32;
  const prefix = prefixText === undefined ? max : /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : NaN;
  if (!(prefix >= 0 && prefix <= max)) return null;
  return { v6: a.v6, bits: a.bits, prefix, text: text.trim() };
}

export function inCidr(a: Address, c: Cidr): boolean {
  if (a.v6 !== c.v6) return false;
  const width = a.v6 ? 128n : 32n;
  const shift = width - BigInt(c.prefix);
  return a.bits >> shift === c.bits >> shift;
}

const cidrs = (list: string[]) => list.map((t) => parseCidr(t)!);

/** Refused whatever the mode: link-local, unspecified, multicast, broadcast (and their IPv4-mapped forms). */
const ALWAYS = cidrs(["169.254.0.0/16", "0.0.0.0/8", "224.0.0.0/4", "255.255.255.255/32", "fe80::/10", "::/128", "ff00::/8"]);
/** Refused in cloud mode: loopback, RFC 1918, CGNAT, IPv6 ULA. */
const INTERNAL = cidrs(["127.0.0.0/8", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "::1/128", "fc00::/7"]);
/** Where plain HTTP may carry a credential (docs/guards.md#cleartext-rule): loopback or private. */
const LOCAL = cidrs(["127.0.0.0/8", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "::1/128", "fc00::/7"]);

export interface EgressRules {
  mode: "self-hosted" | "cloud";
  allow: Cidr[];
  deny: Cidr[];
}

/** Whether the gateway may dial `address`. */
export function egressAllowed(address: Address, rules: EgressRules): boolean {
  if (rules.deny.some((c) => inCidr(address, c))) return false;
  if (rules.allow.some((c) => inCidr(address, c))) return true;
  if (ALWAYS.some((c) => inCidr(address, c))) return false;
  if (rules.mode === "cloud" && INTERNAL.some((c) => inCidr(address, c))) return false;
  return true;
}

export function explicitlyAllowed(address: Address, rules: EgressRules): boolean {
  return !rules.deny.some((c) => inCidr(address, c)) && rules.allow.some((c) => inCidr(address, c));
}

export function isLocalAddress(address: Address): boolean {
  return LOCAL.some((c) => inCidr(address, c));
}

export function isLoopback(address: Address): boolean {
  return inCidr(address, INTERNAL[0]!) || inCidr(address, INTERNAL[5]!);
}

export function isLoopbackOrUnspecified(address: Address): boolean {
  return inCidr(address, INTERNAL[0]!) || inCidr(address, INTERNAL[5]!) || inCidr(address, ALWAYS[1]!) || inCidr(address, ALWAYS[5]!);
}
