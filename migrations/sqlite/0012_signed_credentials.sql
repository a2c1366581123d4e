CREATE TABLE `minted_tokens` (
	`key` text PRIMARY KEY NOT NULL,
	`token_sealed` text,
	`expires_at` integer,
	`lease_owner` text,
	`lease_until` integer,
	`updated_at` text NOT NULL
);
