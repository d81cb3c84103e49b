#!/usr/bin/env node
import { runCli } from './run-cli.js';

void runCli(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
}).then((code) => {
  process.exitCode = code;
  // Worker threads and wasm runtimes can keep the event loop alive: exit once output drains.
  setTimeout(() => process.exit(code), 50).unref();
});
