import { existsSync } from 'node:fs';

/**
 * True when bubblewrap is installed. The sandbox test files skip (with a message saying why) only
 * when it is absent; CI installs it in `.ci/run`, so they run there.
 * @internal
 */
export const HAS_BWRAP = ['/usr/bin/bwrap', '/bin/bwrap', '/usr/local/bin/bwrap'].some((path) =>
  existsSync(path),
);

if (!HAS_BWRAP) {
  console.warn(
    '[@rlvr/verifiers] SKIPPING sandbox tests: bubblewrap (`bwrap`) is not installed. ' +
      'Install it with `apt-get install bubblewrap` to run them.',
  );
}
