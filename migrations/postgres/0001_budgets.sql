CREATE TABLE "budget_reservations" (
	"id" text PRIMARY KEY NOT NULL,
	"secret_id" text NOT NULL,
	"organization_id" text NOT NULL,
	"estimate_nanos" bigint NOT NULL,
	"expires_at" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "budget_spend" (
	"secret_id" text NOT NULL,
	"organization_id" text NOT NULL,
	"bucket" text NOT NULL,
	"nanos" bigint NOT NULL,
	CONSTRAINT "budget_spend_secret_id_organization_id_bucket_pk" PRIMARY KEY("secret_id","organization_id","bucket")
);
--> statement-breakpoint
CREATE TABLE "budgets" (
	"secret_id" text NOT NULL,
	"organization_id" text NOT NULL,
	"limit_cents" integer NOT NULL,
	"period" text NOT NULL,
	"created_at" text NOT NULL,
	"updated_at" text NOT NULL,
	CONSTRAINT "budgets_secret_id_organization_id_pk" PRIMARY KEY("secret_id","organization_id")
);
--> statement-breakpoint
ALTER TABLE "budgets" ADD CONSTRAINT "budgets_secret_id_secrets_id_fk" FOREIGN KEY ("secret_id") REFERENCES "public"."secrets"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "budgets" ADD CONSTRAINT "budgets_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "budget_reservations_owner" ON "budget_reservations" USING btree ("secret_id","organization_id","expires_at");