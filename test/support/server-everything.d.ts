// server-everything ships JavaScript without declarations: the one factory the MCP test servers import.
declare module "@modelcontextprotocol/server-everything/dist/server/index.js" {
  export function createServer(): { server: unknown; cleanup: (sessionId?: string) => void };
}
