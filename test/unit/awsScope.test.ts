// Region and service of an AWS request (docs/injection.md#aws-signature-v4): from the host in every form AWS
// names its endpoints, from an agent's credential scope, and the order between them and a secret's override.
import { describe, expect, test } from "bun:test";
import { scopeOfCredential, scopeOfHost, signingScope } from "../../src/core/awsScope.ts";

describe("scopeOfHost", () => {
  test.each([
    ["s3.amazonaws.com", "us-east-1", "s3"],
    ["bucket.s3.amazonaws.com", "us-east-1", "s3"],
    ["bucket.s3.eu-west-1.amazonaws.com", "eu-west-1", "s3"],
    ["s3.eu-central-1.amazonaws.com", "eu-central-1", "s3"],
    ["s3-us-west-2.amazonaws.com", "us-west-2", "s3"],
    ["bucket.s3.dualstack.ap-south-1.amazonaws.com", "ap-south-1", "s3"],
    ["sts.amazonaws.com", "us-east-1", "sts"],
    ["iam.amazonaws.com", "us-east-1", "iam"],
    ["sts.us-west-2.amazonaws.com", "us-west-2", "sts"],
    ["dynamodb.eu-north-1.amazonaws.com", "eu-north-1", "dynamodb"],
    ["bedrock-runtime.us-east-1.amazonaws.com", "us-east-1", "bedrock"],
    ["bedrock-agent-runtime.eu-west-3.amazonaws.com", "eu-west-3", "bedrock"],
    ["runtime.sagemaker.us-east-2.amazonaws.com", "us-east-2", "sagemaker"],
    ["sqs.us-gov-west-1.amazonaws.com", "us-gov-west-1", "sqs"],
    ["s3.cn-north-1.amazonaws.com.cn", "cn-north-1", "s3"],
    ["Lambda.US-EAST-1.amazonaws.com.", "us-east-1", "lambda"],
  ])("%s → %s / %s", (host, region, service) => {
    expect(scopeOfHost(host)).toEqual({ region, service });
  });

  test("a host that is not AWS's names nothing", () => {
    expect(scopeOfHost("storage.example.com")).toBeNull();
    expect(scopeOfHost("amazonaws.com.evil.test")).toBeNull();
  });
});

describe("scopeOfCredential", () => {
  test("the five parts of a SigV4 credential", () => {
    expect(scopeOfCredential("AKIAX/20250101/eu-west-1/s3/aws4_request")).toEqual({ keyId: "AKIAX", region: "eu-west-1", service: "s3" });
    expect(scopeOfCredential("AKIAX/20250101/eu-west-1/s3")).toBeNull();
    expect(scopeOfCredential("AKIAX/20250101/eu-west-1/s3/other")).toBeNull();
  });
});

describe("signingScope: the secret's override, else the agent's scope, else the host", () => {
  test("each in its turn", () => {
    const agent = { region: "us-west-2", service: "bedrock" };
    expect(signingScope({}, null, "sqs.eu-west-1.amazonaws.com")).toEqual({ region: "eu-west-1", service: "sqs" });
    expect(signingScope({}, agent, "bedrock-runtime.eu-west-1.amazonaws.com")).toEqual(agent);
    expect(signingScope({ region: "ap-south-1" }, agent, "x.amazonaws.com")).toEqual({ region: "ap-south-1", service: "bedrock" });
    expect(signingScope({ region: "ap-south-1", service: "s3" }, null, "minio.example.test")).toEqual({ region: "ap-south-1", service: "s3" });
    expect(signingScope({ region: "ap-south-1" }, null, "minio.example.test")).toBeNull();
  });
});
