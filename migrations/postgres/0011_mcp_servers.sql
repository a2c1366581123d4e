CREATE TABLE "agent_mcp_grants" (
	"agent_id" text NOT NULL,
	"mcp_server_id" text NOT NULL,
	"access" text NOT NULL,
	"allow" text NOT NULL,
	"ask" text NOT NULL,
	"arguments" text NOT NULL,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL,
	CONSTRAINT "agent_mcp_grants_agent_id_mcp_server_id_pk" PRIMARY KEY("agent_id","mcp_server_id")
);
--> statement-breakpoint
CREATE TABLE "mcp_servers" (
	"id" text PRIMARY KEY NOT NULL,
	"organization_id" text NOT NULL,
	"project_id" text NOT NULL,
	"name" text NOT NULL,
	"url" text NOT NULL,
	"auth_kind" text NOT NULL,
	"status" text NOT NULL,
	"credential_sealed" text,
	"oauth_sealed" text,
	"version" integer NOT NULL,
	"refresh_failures" integer DEFAULT 0 NOT NULL,
	"tools" text NOT NULL,
	"tools_refreshed_at" text,
	"last_error" text,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL
);
--> statement-breakpoint
ALTER TABLE "agent_mcp_grants" ADD CONSTRAINT "agent_mcp_grants_agent_id_agents_id_fk" FOREIGN KEY ("agent_id") REFERENCES "public"."agents"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "agent_mcp_grants" ADD CONSTRAINT "agent_mcp_grants_mcp_server_id_mcp_servers_id_fk" FOREIGN KEY ("mcp_server_id") REFERENCES "public"."mcp_servers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "mcp_servers" ADD CONSTRAINT "mcp_servers_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "mcp_servers" ADD CONSTRAINT "mcp_servers_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "agent_mcp_grants_server" ON "agent_mcp_grants" USING btree ("mcp_server_id");--> statement-breakpoint
CREATE INDEX "mcp_servers_project" ON "mcp_servers" USING btree ("project_id");