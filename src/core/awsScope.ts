// Which region and service an AWS request is signed for (docs/injection.md#aws-signature-v4): the secret's
// override; else the agent's own credential scope (SDKs know the signing name: `bedrock` for `bedrock-runtime`,
// the bucket's region behind `s3.amazonaws.com`); else what the host says. Pure.

export interface AwsScope {
  region: string;
  service: string;
}

/** Hosts that name no region: global services, signed in us-east-1. */
const GLOBAL_REGION = "us-east-1";

/** Endpoint prefixes whose signing name differs from the prefix. */
const SIGNING_NAMES: Record<string, string> = {
  "bedrock-runtime": "bedrock",
  "bedrock-agent-runtime": "bedrock",
  "bedrock-agent": "bedrock",
  "runtime.sagemaker": "sagemaker",
  "runtime.lex": "lex",
  email: "ses",
  "streams.dynamodb": "dynamodb",
  "data.iot": "iotdata",
};

const AWS_SUFFIX = /\.amazonaws\.com(?:\.cn)?$/;
const REGION = /^[a-z]{2}(?:-gov|-iso[a-z]?)?-[a-z]+-\d$/;

/** The credential scope of a `Credential=AKID/date/region/service/aws4_request` value, if it is one. */
export function scopeOfCredential(credential: string): (AwsScope & { keyId: string }) | null {
  const parts = credential.split("/");
  if (parts.length !== 5 || parts[4] !== "aws4_request" || !parts[2] || !parts[3]) return null;
  return { keyId: parts[0]!, region: parts[2], service: parts[3] };
}

/** Region and service from an AWS host name; null when the host is not one AWS names that way. */
export function scopeOfHost(host: string): AwsScope | null {
  const h = host.toLowerCase().replace(/\.$/, "");
  if (!AWS_SUFFIX.test(h)) return null;
  const labels = h.replace(AWS_SUFFIX, "").split(".");
  // S3 in every form: s3.amazonaws.com, <bucket>.s3.<region>…, s3-<region>…, s3.dualstack.<region>…, s3-accelerate.
  const s3 = labels.findIndex((l) => l === "s3" || l.startsWith("s3-"));
  if (s3 !== -1) {
    const label = labels[s3]!;
    const after = labels.slice(s3 + 1).filter((l) => l !== "dualstack");
    const region = label.startsWith("s3-") && REGION.test(label.slice(3)) ? label.slice(3) : after.find((l) => REGION.test(l));
    return { region: region ?? GLOBAL_REGION, service: "s3" };
  }
  const regionAt = labels.findIndex((l) => REGION.test(l));
  if (regionAt === -1) return { region: GLOBAL_REGION, service: labels[labels.length - 1]! };
  const prefix = labels.slice(0, regionAt).filter((l) => l !== "fips").join(".");
  const last = labels[regionAt - 1] ?? prefix;
  const service = SIGNING_NAMES[prefix] ?? SIGNING_NAMES[last] ?? (last || prefix);
  return { region: labels[regionAt]!, service: service.replace(/-fips$/, "") };
}

/**
 * The scope to sign with, by the order of docs/injection.md#aws-signature-v4. Null when nothing names a region
 * and service (a host that is not AWS's and a secret without both overrides, agent unsigned).
 */
export function signingScope(override: Partial<AwsScope>, agent: AwsScope | null, host: string): AwsScope | null {
  const fromHost = agent ? null : scopeOfHost(host);
  const region = override.region ?? agent?.region ?? fromHost?.region;
  const service = override.service ?? agent?.service ?? fromHost?.service;
  return region && service ? { region, service } : null;
}
