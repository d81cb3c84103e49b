import { describe, expect, it } from 'vitest';
import { runTests } from './run-tests.js';
import { HAS_BWRAP } from './sandbox-test-support.js';

// Writes outside the work dir (the home directory's dotfiles, /tmp, the root) must end as
// `blocked` with a `file-write` violation even when the program swallows the error, exactly as
// reads outside it do. `~` is not the work dir: HOME points outside it.
const limits = { wallTimeMs: 8000, cpuTimeMs: 4000, memoryBytes: 256 * 1024 * 1024 };

describe.skipIf(!HAS_BWRAP)(
  'sandbox attack suite: writes outside the work dir',
  { timeout: 60_000 },
  () => {
    it('should block Python writes to ~/.bashrc, ~/.profile, /tmp and through sqlite3', async () => {
      for (const attempt of [
        'import os\nopen(os.path.expanduser("~/.bashrc"), "a").write("x")',
        'import os\nopen(os.environ["HOME"] + "/.profile", "w").write("x")',
        'import pathlib\n(pathlib.Path.home() / ".bashrc").write_text("x")',
        'open("/tmp/x", "w").write("x")',
        'import sqlite3\nsqlite3.connect("/tmp/x.db").execute("create table t(x)")',
      ]) {
        const indented = attempt
          .split('\n')
          .map((line) => `    ${line}`)
          .join('\n');
        const result = await runTests({
          language: 'python',
          program: `try:\n${indented}\nexcept BaseException:\n    pass\ndef add(a, b):\n    return a + b\n`,
          tests: ['assert add(1, 2) == 3'],
          limits,
        });
        expect(result.verdict, attempt).toBe('blocked');
        expect(result.score).toBe(0);
        expect(result.violations[0]?.kind, attempt).toBe('file-write');
      }
    });

    it('should block JavaScript writes to ~/.bashrc, /tmp and through every fs entry point', async () => {
      for (const attempt of [
        "require('fs').appendFileSync(require('os').homedir() + '/.bashrc', 'x')",
        "require('fs').writeFileSync(process.env.HOME + '/.profile', 'x')",
        "new (require('fs').WriteStream)('/tmp/x').on('error', () => {}).write('x')",
        "new (require('fs').FileWriteStream)('/tmp/x').on('error', () => {})",
        "process.getBuiltinModule('fs').writeFileSync('/tmp/x', 'x')",
        "process.getBuiltinModule('node:fs/promises').writeFile('/tmp/x', 'x').catch(() => {})",
      ]) {
        const result = await runTests({
          language: 'javascript',
          program: `try { ${attempt}; } catch {}\nfunction add(a, b) { return a + b; }`,
          tests: ['assert.strictEqual(add(1, 2), 3);'],
          limits,
        });
        expect(result.verdict, attempt).toBe('blocked');
        expect(result.violations[0]?.kind, attempt).toBe('file-write');
      }
    });

    it('should block JavaScript reads through lazily loaded fs entry points', async () => {
      for (const attempt of [
        "require('fs').opendirSync('/')",
        "require('fs').opendir('/', () => {})",
        "new (require('fs').ReadStream)('/etc/passwd').on('error', () => {})",
        "process.getBuiltinModule('fs').readFileSync('/etc/passwd')",
      ]) {
        const result = await runTests({
          language: 'javascript',
          program: `try { ${attempt}; } catch {}\nfunction add(a, b) { return a + b; }`,
          tests: ['assert.strictEqual(add(1, 2), 3);'],
          limits,
        });
        expect(result.verdict, attempt).toBe('blocked');
        expect(result.violations[0]?.kind, attempt).toBe('file-read');
      }
    });

    it("should keep import() from loading the real fs through vm's main-context loader", async () => {
      const result = await runTests({
        language: 'javascript',
        program:
          "const vm = require('vm');\nglobalThis.seen = 'none';\ntry {\n  new vm.Script(\"import('node:fs').then((fs) => { seen = typeof fs.writeFileSync; }, (e) => { seen = e.code; })\", { importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER }).runInThisContext();\n} catch (e) { seen = String(e.code); }\nfunction add(a, b) { return a + b; }",
        tests: [
          "await new Promise((done) => setTimeout(done, 50)); assert.notStrictEqual(seen, 'function');",
        ],
        limits,
      });
      expect(result.verdict, result.reason).toBe('pass');
    });

    it('should still let programs write in the work dir (and read what they wrote)', async () => {
      const python = await runTests({
        language: 'python',
        program:
          'import os, sqlite3, tempfile\nopen("notes.txt", "w").write("ok")\nfd, name = tempfile.mkstemp()\nos.close(fd)\nsqlite3.connect("db.sqlite").execute("create table t(x)")\ndef read():\n    return open("notes.txt").read()\n',
        tests: ['assert read() == "ok"'],
        limits,
      });
      expect(python.verdict, python.reason).toBe('pass');
      const javascript = await runTests({
        language: 'javascript',
        program:
          "const fs = require('fs'); fs.writeFileSync('notes.txt', 'ok'); const s = fs.createWriteStream('log.txt'); s.end('x');\nfunction read() { return fs.readFileSync('notes.txt', 'utf8'); }",
        tests: ["assert.strictEqual(read(), 'ok');"],
        limits,
      });
      expect(javascript.verdict, javascript.reason).toBe('pass');
    });
  },
);
