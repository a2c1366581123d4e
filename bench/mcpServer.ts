// The MCP benchmark's server, in a process of its own (bench/mcp.ts starts it): test/support/mcp.ts's HTTPS MCP
// server with `tools` made-up echo tools. argv: <pki json> <token> <tools>. Prints {"port": n} once listening.
import { startMcpServer } from "../test/support/mcp.ts";

const [pkiJson, token, tools] = process.argv.slice(2);
const server = await startMcpServer(JSON.parse(pkiJson!), { token: token!, tools: Number(tools) });
console.log(JSON.stringify({ port: server.port }));
process.on("SIGTERM", () => void server.stop().then(() => process.exit(0)));
