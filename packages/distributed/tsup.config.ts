import { readFileSync } from 'node:fs';
import { defineConfig } from 'tsup';

const { version } = JSON.parse(
  readFileSync(new URL('./package.json', import.meta.url), 'utf8'),
) as {
  version: string;
};

const define = { __PACKAGE_VERSION__: JSON.stringify(version) };

export default defineConfig([
  {
    entry: { index: 'src/index.ts' },
    format: ['esm', 'cjs'],
    dts: { entry: { index: 'src/index.ts' } },
    sourcemap: true,
    clean: true,
    target: 'node20',
    define,
  },
  {
    // the worker CLI and its BullMQ sandboxed processor (forked per job slot): ESM only
    entry: {
      cli: 'src/cli.ts',
      'rollout-processor': 'src/worker/rollout-processor.ts',
      'verify-processor': 'src/worker/verify-processor.ts',
    },
    format: ['esm'],
    sourcemap: true,
    target: 'node20',
    define,
  },
]);
