/** A drizzle-kit migration, embedded as text (see embed.ts). */
export interface EmbeddedMigration {
  tag: string;
  when: number;
  breakpoints: boolean;
  sql: string;
}
