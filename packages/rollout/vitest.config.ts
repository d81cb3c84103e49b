import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  define: { __PACKAGE_VERSION__: JSON.stringify('0.0.0-test') },
  // The examples import the package by name, as a user would; tests run them on the source.
  resolve: {
    alias: { '@rlvr/rollout': fileURLToPath(new URL('./src/index.ts', import.meta.url)) },
  },
  test: {
    include: ['src/**/*.test.ts', 'examples/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
