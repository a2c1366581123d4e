// Agent setup (docs/api.md#agent-setup): the container configuration, credential stubs and the gateway URL.
import { Type as T, type Static } from "@sinclair/typebox";
import { Enum, StringMap } from "./common.ts";

export const GatewayUrl = T.Object({ url: T.String() }, { $id: "GatewayUrl" });
export const ContainerConfig = T.Object(
  {
    env: StringMap,
    caCertificate: T.String(),
    caCertificateContainerPath: T.String(),
    credentialStubs: T.Array(T.Object({ containerPath: T.String(), content: T.String() })),
    warnings: T.Optional(T.Array(T.String())),
    mcpServers: T.Optional(T.Array(
      T.Object({
        id: T.String(),
        name: T.String(),
        url: T.String({ description: "the URL an MCP client connects to (through the gateway, without a token)" }),
        status: Enum("pending", "connected", "error", "revoked"),
        access: Enum("full", "custom"),
        tools: T.Array(T.String(), { description: "the tools the agent may call (allow and ask); [] with full access" }),
      }),
      { description: "the agent's MCP servers (docs/mcp.md#agent-setup); absent when it may use none" },
    )),
  },
  { $id: "ContainerConfig" },
);
export type ContainerConfig = Static<typeof ContainerConfig>;
export const CredentialStubList = T.Object({ agents: T.Array(T.String()) }, { $id: "CredentialStubList" });
export const CredentialStub = T.Object(
  { agent: T.String(), filePath: T.String(), content: T.String(), authMode: Enum("api-key", "oauth"), permissions: T.String({ pattern: "^0[0-7]{3}$" }) },
  { $id: "CredentialStub" },
);
