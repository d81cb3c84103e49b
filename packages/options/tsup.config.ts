import { readFileSync } from 'node:fs';
import { defineConfig } from 'tsup';

const { version } = JSON.parse(
  readFileSync(new URL('./package.json', import.meta.url), 'utf8'),
) as {
  version: string;
};

export default defineConfig({
  entry: { index: 'src/index.ts', readme: 'src/readme.ts' },
  format: ['esm', 'cjs'],
  dts: { entry: { index: 'src/index.ts', readme: 'src/readme.ts' } },
  sourcemap: true,
  clean: true,
  target: 'node20',
  // zod is bundled (tree-shaken): importing it unbundled loads ~50 locale modules (~100 ms);
  // its types stay imports of 'zod/mini' (a dependency) in the declarations.
  noExternal: ['zod'],
  define: { __PACKAGE_VERSION__: JSON.stringify(version) },
});
