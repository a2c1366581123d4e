CREATE TABLE "budget_alerts" (
	"budget_id" text NOT NULL,
	"window_start" bigint NOT NULL,
	"percent" integer NOT NULL,
	"created_at" text NOT NULL,
	CONSTRAINT "budget_alerts_budget_id_window_start_percent_pk" PRIMARY KEY("budget_id","window_start","percent")
);
--> statement-breakpoint
CREATE TABLE "budget_windows" (
	"budget_id" text NOT NULL,
	"window_start" bigint NOT NULL,
	"holder" text NOT NULL,
	"spent_nanos" bigint NOT NULL,
	"held_nanos" bigint NOT NULL,
	"expires_at" text NOT NULL,
	CONSTRAINT "budget_windows_budget_id_window_start_holder_pk" PRIMARY KEY("budget_id","window_start","holder")
);
--> statement-breakpoint
CREATE TABLE "scope_budgets" (
	"id" text PRIMARY KEY NOT NULL,
	"scope" text NOT NULL,
	"organization_id" text NOT NULL,
	"project_id" text,
	"agent_id" text,
	"owner_id" text NOT NULL,
	"secret_type" text,
	"limit_cents" integer NOT NULL,
	"period" text NOT NULL,
	"alert_percents" text NOT NULL,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "spend_records" (
	"seq" bigserial PRIMARY KEY NOT NULL,
	"organization_id" text NOT NULL,
	"project_id" text NOT NULL,
	"agent_id" text NOT NULL,
	"secret_type" text NOT NULL,
	"model" text NOT NULL,
	"input_tokens" bigint NOT NULL,
	"output_tokens" bigint NOT NULL,
	"cost_nanos" bigint NOT NULL,
	"created_at" text NOT NULL
);
--> statement-breakpoint
ALTER TABLE "budget_alerts" ADD CONSTRAINT "budget_alerts_budget_id_scope_budgets_id_fk" FOREIGN KEY ("budget_id") REFERENCES "public"."scope_budgets"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "budget_windows" ADD CONSTRAINT "budget_windows_budget_id_scope_budgets_id_fk" FOREIGN KEY ("budget_id") REFERENCES "public"."scope_budgets"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "scope_budgets" ADD CONSTRAINT "scope_budgets_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "scope_budgets" ADD CONSTRAINT "scope_budgets_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "scope_budgets" ADD CONSTRAINT "scope_budgets_agent_id_agents_id_fk" FOREIGN KEY ("agent_id") REFERENCES "public"."agents"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "budget_windows_holder" ON "budget_windows" USING btree ("holder");--> statement-breakpoint
CREATE UNIQUE INDEX "scope_budgets_owner_type" ON "scope_budgets" USING btree ("owner_id","secret_type","period") WHERE secret_type IS NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "scope_budgets_owner_any" ON "scope_budgets" USING btree ("owner_id","period") WHERE secret_type IS NULL;--> statement-breakpoint
CREATE INDEX "scope_budgets_owner" ON "scope_budgets" USING btree ("owner_id");--> statement-breakpoint
CREATE INDEX "scope_budgets_project" ON "scope_budgets" USING btree ("organization_id","project_id");--> statement-breakpoint
CREATE INDEX "spend_records_project_time" ON "spend_records" USING btree ("project_id","created_at");--> statement-breakpoint
CREATE INDEX "spend_records_org_time" ON "spend_records" USING btree ("organization_id","created_at");