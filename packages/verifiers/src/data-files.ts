/** The package's data files (`data/`: language profiles, the Punkt model), found from this module. Internal. */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ErrorCode, RlvrError } from '@rlvr/core';

function moduleDirectory(): string {
  if (typeof __filename === 'string' && __filename.endsWith('.cjs')) return dirname(__filename);
  return dirname(fileURLToPath(import.meta.url));
}

/**
 * The path of `data/<name>`: next to `dist/` in the published package, three folders up from a
 * source module in the repository.
 */
export function dataFile(name: string): string {
  let directory = moduleDirectory();
  for (let up = 0; up < 5; up++) {
    const candidate = join(directory, 'data', name);
    if (existsSync(candidate)) return candidate;
    directory = dirname(directory);
  }
  throw new RlvrError(
    ErrorCode.UNAVAILABLE,
    `@rlvr/verifiers' data file data/${name} was not found above ${moduleDirectory()} (a bundler that copies only the JavaScript leaves it behind)`,
  );
}
