import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/** PATH as it was when the tests started (some tests replace `process.env.PATH`). */
const HOST_PATH = process.env.PATH ?? '';

/**
 * The first executable `name` on the host's PATH (as the tests started), or null.
 * @internal
 */
export function onPath(name: string): string | null {
  for (const directory of HOST_PATH.split(delimiter)) {
    if (!directory) continue;
    const candidate = join(directory, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {}
  }
  return null;
}

/**
 * True when bubblewrap is on PATH. The sandbox test files skip (with a message saying why) only
 * when it is absent; CI installs it in `.ci/run`, so they run there.
 * @internal
 */
export const HAS_BWRAP = onPath('bwrap') !== null;

if (!HAS_BWRAP) {
  console.warn(
    '[@rlvr/verifiers] SKIPPING sandbox tests: bubblewrap (`bwrap`) is not on PATH. ' +
      'Install it with `apt-get install bubblewrap` to run them.',
  );
}
