CREATE TABLE "minted_tokens" (
	"key" text PRIMARY KEY NOT NULL,
	"token_sealed" text,
	"expires_at" bigint,
	"lease_owner" text,
	"lease_until" bigint,
	"updated_at" text NOT NULL
);
