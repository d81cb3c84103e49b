import { readFileSync, writeFileSync } from 'node:fs';
import type { Schema } from './fields.js';
import { syncOptionsTables } from './tables.js';

/**
 * The generated options tables of a README that differ from their schemas (none: it is current),
 * for a package's test. With `UPDATE_OPTIONS_TABLES=1` in the environment (or `update: true`) it
 * rewrites them and returns none. Node only (`@rlvr/options/readme`).
 */
export function staleReadmeTables(
  readme: string | URL,
  schemas: Readonly<Record<string, Schema>>,
  options: { update?: boolean } = {},
): string[] {
  const update = options.update ?? process.env.UPDATE_OPTIONS_TABLES === '1';
  const { stale, markdown } = syncOptionsTables(readFileSync(readme, 'utf8'), schemas);
  if (!update) return stale;
  if (stale.length > 0) writeFileSync(readme, markdown);
  return [];
}
