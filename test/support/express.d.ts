// express ships no types and @types/express is not installed: the little the MCP authorization-server fixture
// (mcpAuthServer.ts) uses of it, and what the MCP SDK's auth types import from it.
declare module "express" {
  import type { IncomingMessage, Server, ServerResponse } from "node:http";
  export interface Request extends IncomingMessage {
    body?: Record<string, unknown>;
  }
  export interface Response extends ServerResponse {
    status(code: number): Response;
    type(type: string): Response;
    send(body: string): Response;
    redirect(status: number, url: string): void;
  }
  export type RequestHandler = (req: Request, res: Response, next: () => void) => void;
  export interface Application {
    use(...handlers: unknown[]): void;
    post(path: string, handler: (req: Request, res: Response) => void): void;
    listen(port: number, host: string, callback: () => void): Server;
  }
  interface Express {
    (): Application;
    urlencoded(options: { extended: boolean }): RequestHandler;
    json(): RequestHandler;
    Router(): unknown;
  }
  const express: Express;
  export default express;
}
