import { JAVASCRIPT_GUARDS } from './harness-javascript-guards.js';

/**
 * The JavaScript test harness, run inside the sandbox as
 * `node --experimental-permission --allow-fs-read=<workDir> --allow-fs-write=<workDir> -e <harness>`
 * (no file: nothing to mount, nothing left in the temp dir).
 *
 * Same protocol as the Python harness (see `harness-python.ts` and `docs/code-sandbox.md`): a
 * length-prefixed payload on stdin, the run's `cgroup.procs` descriptors on fds 4 and up. The
 * program runs as a classic script in the main context (its top-level declarations are visible to
 * the tests); it gets a guarded `require` (a builtin allowlist; `fs` wrapped to report and deny paths
 * outside the work dir; process, network, inspector, v8 and loader modules reported as violations),
 * no `process.binding`/`dlopen`/`mainModule`, and a `fetch` that reports. Each test is compiled as a
 * strict async function receiving the harness's own `assert` and `require`, so patching the shared
 * `assert` module or globals does not reach the tests (and is reported as tampering). Strict code
 * exposes no callers or receivers through `Function.caller` or V8 call sites, so the test code and
 * the nonce (kept in this closure) are out of the program's reach.
 * @internal
 */
export const JAVASCRIPT_HARNESS = String.raw`'use strict';
(() => {
  const fs = require('node:fs');
  const path = require('node:path');
  const vm = require('node:vm');
  const realAssert = require('node:assert');
  // Natives captured before the program runs; after that the harness uses no patchable
  // prototype method on any path that decides a verdict or records a violation.
  const apply = Reflect.apply;
  const ownKeys = Reflect.ownKeys;
  const hasOwn = Object.hasOwn;
  const promiseThen = Promise.prototype.then;
  const startsWith = String.prototype.startsWith;
  const writeSync = fs.writeSync;
  const realpathSync = fs.realpathSync;
  const existsSync = fs.existsSync;
  const resolvePath = path.resolve;
  const reallyExit = process.reallyExit;
  const String_ = String;
  const AssertionError_ = realAssert.AssertionError;
  const RangeError_ = RangeError;
  const Error_ = Error;
  const isBuffer = Buffer.isBuffer;
  const URL_ = URL;
  // Payload: a header line of byte lengths, then the UTF-8 fields back to back (see above).
  const data = fs.readFileSync(0);
  const newline = data.indexOf(10);
  const sizes = newline < 0 ? [] : data.toString('latin1', 0, newline).split(' ');
  const fields = [];
  let position = newline + 1;
  for (let index = 0; index < sizes.length; index++) {
    const end = position + Number(sizes[index]);
    fields.push(data.toString('utf8', position, end));
    position = end;
  }
  if (fields.length < 9) apply(reallyExit, process, [2]);
  const nonce = fields[0];
  const workDir = fields[1];
  const programFile = fields[2];
  const payload = {
    program: fields[3],
    setup: fields[4],
    tests: fields[5] === 's' ? fields[8] : fields.slice(8),
  };
  const cgroupFds = Number(fields[7]);

  const clean = (value) => {
    let text;
    try {
      text = String_(value);
    } catch {
      return 'unprintable value';
    }
    let out = '';
    const length = text.length < 300 ? text.length : 300;
    for (let index = 0; index < length; index++) {
      const char = text[index];
      out += char === '\n' || char === '\r' ? ' ' : char;
    }
    return out;
  };
  const emit = (line) => {
    try {
      writeSync(3, line + '\n');
    } catch {}
  };
  const describe = (error) => {
    try {
      if (error !== null && typeof error === 'object') {
        return clean(String_(error.name) + ': ' + String_(error.message));
      }
      return clean('thrown ' + String_(error));
    } catch {
      return 'unprintable exception';
    }
  };
  const isMemory = (error) => {
    try {
      if (!(error instanceof RangeError_)) return false;
      const message = String_(error.message);
      return (
        message === 'Invalid array length' ||
        message === 'Invalid string length' ||
        message === 'Array buffer allocation failed' ||
        apply(startsWith, message, ['Invalid typed array length'])
      );
    } catch {
      return false;
    }
  };
  const exit = () => apply(reallyExit, process, [0]);

  // --- join the run's cgroup(s) before any program code runs --------------------------------
  for (let fd = 4; fd < 4 + cgroupFds; fd++) {
    try {
      writeSync(fd, '0');
      fs.closeSync(fd);
    } catch (error) {
      emit(nonce + ' E setup error cannot join the run cgroup: ' + describe(error));
      exit();
    }
  }

  // --- compile tests before any program code runs -------------------------------------------
  // Each test (and the setup) is a strict async arrow: strict code exposes no caller.
  const compileTest = (source, filename) =>
    vm.compileFunction(
      'return (async () => {"use strict";\n' + source + '\n})();',
      ['assert', 'require'],
      { filename },
    );
  const tests = [];
  try {
    if (payload.setup) tests.push({ kind: 'setup', fn: compileTest(payload.setup, '<setup>') });
    const rawTests = typeof payload.tests === 'string' ? [payload.tests] : payload.tests;
    for (let index = 0; index < rawTests.length; index++) {
      tests.push({ kind: 'test', fn: compileTest(rawTests[index], '<test ' + index + '>') });
    }
  } catch (error) {
    emit(nonce + ' E setup error ' + describe(error));
    exit();
  }
  let total = 0;
  for (let index = 0; index < tests.length; index++) if (tests[index].kind === 'test') total++;
  const testCount = tests.length;
  emit(nonce + ' N ' + total);
  const programSource = payload.program;

${JAVASCRIPT_GUARDS}
  const trap = (kind, detail) =>
    function () {
      throw violation(kind, detail);
    };
  process.binding = trap('tamper', 'process.binding');
  process._linkedBinding = trap('tamper', 'process._linkedBinding');
  process.dlopen = trap('tamper', 'process.dlopen');
  Object.defineProperty(process, 'mainModule', { value: undefined, configurable: false, writable: false });
  globalThis.fetch = trap('network', 'fetch');
  if (typeof process.getBuiltinModule === 'function') {
    // Node >= 20.16: the same guarded modules as require (undefined for what is not a builtin).
    const builtinRequire = makeRequire();
    process.getBuiltinModule = function getBuiltinModule(id) {
      try {
        return builtinRequire(id);
      } catch (error) {
        if (error !== null && typeof error === 'object' && error.code === 'MODULE_NOT_FOUND') {
          return undefined;
        }
        throw error;
      }
    };
  }
  globalThis.require = makeRequire();
  globalThis.module = { exports: {} };
  globalThis.exports = globalThis.module.exports;
  globalThis.__filename = programFile;
  globalThis.__dirname = workDir;

  // The tests get a private assert; the shared objects are snapshotted to detect tampering.
  const watchedTargets = [
    realAssert, realAssert.strict, Object, Object.prototype, Function.prototype, Array.prototype,
    String.prototype, Number.prototype, Promise, Promise.prototype, Map.prototype, Set.prototype,
    RegExp.prototype, Error.prototype, JSON, Math, Reflect, Symbol, process,
  ];
  const watchedNames = [
    'assert', 'assert.strict', 'Object', 'Object.prototype', 'Function.prototype',
    'Array.prototype', 'String.prototype', 'Number.prototype', 'Promise', 'Promise.prototype',
    'Map.prototype', 'Set.prototype', 'RegExp.prototype', 'Error.prototype', 'JSON', 'Math',
    'Reflect', 'Symbol', 'process',
  ];
  const watchedProcessKeys = { __proto__: null, reallyExit: true, exit: true, binding: true, dlopen: true, _linkedBinding: true };
  const snapshots = [];
  for (let index = 0; index < watchedTargets.length; index++) {
    const target = watchedTargets[index];
    const keys = ownKeys(target);
    const values = [];
    const kept = [];
    for (let k = 0; k < keys.length; k++) {
      if (target === process && !(typeof keys[k] === 'string' && watchedProcessKeys[keys[k]])) continue;
      const descriptor = Object.getOwnPropertyDescriptor(target, keys[k]);
      if (!descriptor || !('value' in descriptor)) continue;
      kept.push(keys[k]);
      values.push(descriptor.value);
    }
    snapshots.push({ target, keys: kept, values, name: watchedNames[index] });
  }
  const tampered = () => {
    for (let index = 0; index < snapshots.length; index++) {
      const { target, keys, values, name } = snapshots[index];
      for (let k = 0; k < keys.length; k++) {
        let current;
        try {
          current = target[keys[k]];
        } catch {
          return name + '.' + clean(keys[k]);
        }
        if (current !== values[k]) return name + '.' + clean(String_(keys[k]));
      }
    }
    return null;
  };
  // ... and counts the assertions they execute: a suite that executes none passes any program.
  let asserted = 0;
  const counting = (fn) =>
    function (...args) {
      asserted++;
      return apply(fn, this, args);
    };
  const countingAssert = (real, strict) => {
    const counted = counting(real);
    const keys = keysOf(real);
    for (let index = 0; index < keys.length; index++) {
      const key = keys[index];
      const value = real[key];
      if (key === 'strict') continue;
      counted[key] = typeof value === 'function' && !matches(upperFirst, key) ? counting(value) : value;
    }
    counted.strict = strict === null ? counted : strict;
    return freeze(counted);
  };
  const privateStrict = countingAssert(realAssert.strict, null);
  const privateAssert = countingAssert(realAssert, privateStrict);
  const testModules = { __proto__: null, assert: privateAssert, 'assert/strict': privateStrict };

  const testRequire = makeRequire(testModules);

  const finish = (line) => {
    emit(line);
    exit();
  };

  // --- run the program, then the tests (continuation style: no await after the program) ----
  try {
    new vm.Script(programSource, { filename: programFile }).runInThisContext();
  } catch (error) {
    finish(nonce + (isMemory(error) ? ' E load memory ' : ' E load error ') + describe(error));
  }
  let what = tampered();
  if (what !== null) emit('V tamper modified ' + what);
  let passed = 0;
  let testIndex = 0;
  const settle = (test, error, threw) => {
    let status = 'pass';
    let message = '';
    if (threw) {
      let assertion = false;
      try {
        assertion = error instanceof AssertionError_;
      } catch {}
      status = assertion ? 'fail' : isMemory(error) ? 'memory' : 'error';
      message = describe(error);
    }
    what = tampered();
    if (what !== null) emit('V tamper modified ' + what);
    if (test.kind === 'setup') {
      if (status !== 'pass') finish(nonce + ' E setup ' + status + ' ' + message);
      return;
    }
    if (status === 'pass') passed++;
    emit(nonce + ' T ' + testIndex + ' ' + status + ' ' + message);
    testIndex++;
  };
  const runFrom = (position) => {
    if (position >= testCount) {
      // No exit: like under a judge, the program must end on its own (a live timer or handle
      // keeps it running into the wall-clock limit, a late crash is a non-zero exit).
      emit(nonce + ' S ' + passed + ' ' + total + ' ' + asserted);
      return;
    }
    const test = tests[position];
    let result;
    try {
      result = test.fn(privateAssert, testRequire);
    } catch (error) {
      settle(test, error, true);
      runFrom(position + 1);
      return;
    }
    try {
      apply(promiseThen, result, [
        () => {
          settle(test, undefined, false);
          runFrom(position + 1);
        },
        (error) => {
          settle(test, error, true);
          runFrom(position + 1);
        },
      ]);
    } catch (error) {
      emit('V tamper promise machinery');
      finish(nonce + ' E setup error harness promise machinery was tampered with');
    }
  };
  runFrom(0);
})();
`;
