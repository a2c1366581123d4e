// The two unauthenticated agent-setup reads the gateway port serves too (docs/api.md#agent-setup): the gateway's
// CA certificate and its URL.
import { route, type RouteDef } from "../route.ts";
import * as R from "../../core/records/index.ts";
import { returns, returnsText } from "../responses.ts";

export function gatewayRoutes(caPem: string): RouteDef[] {
  return [
    route({
      method: "GET",
      path: "/gateway/ca",
      response: returnsText("application/x-pem-file", "The gateway CA certificate (PEM), as an attachment credgate-gateway-ca.pem"),
      access: "none",
      handler: () =>
        new Response(caPem, {
          headers: {
            "content-type": "application/x-pem-file",
            "content-disposition": 'attachment; filename="credgate-gateway-ca.pem"',
          },
        }),
    }),
    route({
      method: "GET",
      path: "/gateway-url",
      response: returns(R.GatewayUrl),
      access: "none",
      handler: ({ services }) => ({ url: services.deps.config.gatewayUrl }),
    }),
  ];
}
