import { readFileSync } from 'node:fs';
import { defineConfig } from 'tsup';

const { version } = JSON.parse(
  readFileSync(new URL('./package.json', import.meta.url), 'utf8'),
) as {
  version: string;
};

export default defineConfig({
  // the worker thread's entry is its own file next to index.{js,cjs}
  entry: { index: 'src/index.ts', worker: 'src/onnx/worker.ts' },
  shims: true,
  format: ['esm', 'cjs'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'node20',
  define: { __PACKAGE_VERSION__: JSON.stringify(version) },
});
