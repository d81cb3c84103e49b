export * from './code/index.js';
export * from './compose/index.js';
export * from './format/index.js';
export * from './math/index.js';
export * from './puzzles/index.js';
export { VERSION } from './version.js';
