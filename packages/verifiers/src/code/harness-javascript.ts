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

  // --- guards -------------------------------------------------------------------------------
  const violation = (kind, detail) => {
    emit('V ' + kind + ' ' + clean(detail));
    const error = new Error_('[rlvr sandbox] ' + kind + ' denied: ' + clean(detail));
    error.code = 'ERR_ACCESS_DENIED';
    return error;
  };
  const inside = (target) => {
    if (typeof target === 'number') return true;
    let text;
    try {
      if (target instanceof URL_) text = String_(target.pathname);
      else if (typeof target === 'string') text = target;
      else if (isBuffer(target)) text = String_(target);
      else return true;
      let resolved = resolvePath(text);
      if (existsSync(resolved)) resolved = realpathSync(resolved);
      return resolved === workDir || apply(startsWith, resolved, [workDir + '/']);
    } catch {
      return false;
    }
  };
  const writeNames = /^(write|append|mkdir|mkdtemp|rm|rmdir|unlink|rename|copy|cp|symlink|link|chmod|lchmod|chown|lchown|utimes|lutimes|futimes|truncate|createWriteStream)/i;
  const twoPathNames = /^(rename|copyFile|cp|symlink|link)/i;
  // Natives for guards that may be built after the program started (lazily, see below).
  const keysOf = Object.keys;
  const describeProperty = Object.getOwnPropertyDescriptor;
  const defineProperty = Object.defineProperty;
  const construct = Reflect.construct;
  const freeze = Object.freeze;
  const regexTest = RegExp.prototype.test;
  const matches = (pattern, text) => apply(regexTest, pattern, [text]);
  const upperFirst = /^[A-Z]/;
  const opensName = /^open/;
  // Accessors of the real module (fs.promises, fs.ReadStream, ...) become accessors of the guarded
  // copy, resolved by 'lazy' on first use: reading them here would load streams, readline and
  // fs/promises (~15 internal modules) on every run. The guarded copies themselves are built on the
  // program's first require (most programs never touch fs), only with natives captured above;
  // properties are defined, not assigned, so setters the program put on Object.prototype never run.
  const own = (target, key, value) =>
    defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
  const guardCall = (key, value) => {
    const writesAlways = matches(writeNames, key);
    const opens = matches(opensName, key);
    const twoPaths = matches(twoPathNames, key);
    return function (...args) {
      const flags = args[1];
      const writes =
        writesAlways ||
        (opens && typeof flags === 'string' && flags !== 'r' && flags !== 'rs' && flags !== 'sr') ||
        (opens && typeof flags === 'number' && (flags & 0x643) !== 0);
      const count = twoPaths ? 2 : 1;
      for (let index = 0; index < count && index < args.length; index++) {
        if (!inside(args[index])) {
          throw violation(writes ? 'file-write' : 'file-read', key + ' ' + clean(args[index]));
        }
      }
      return apply(value, this, args);
    };
  };
  // fs.ReadStream and friends: constructors (callable without new) whose first argument is a path.
  const streamClasses = { __proto__: null, ReadStream: false, FileReadStream: false, WriteStream: true, FileWriteStream: true };
  const guardClass = (key, Real) => {
    const Guarded = function (...args) {
      if (!inside(args[0])) {
        throw violation(streamClasses[key] ? 'file-write' : 'file-read', key + ' ' + clean(args[0]));
      }
      return construct(Real, args, new.target === undefined ? Real : new.target);
    };
    Guarded.prototype = Real.prototype;
    return Guarded;
  };
  // Accessors (opendir, opendirSync, the stream classes, promises) resolve on first use and are
  // guarded like the rest; functions are guarded whether the module defines them as values or not.
  const guardValue = (key, value) => {
    if (typeof value !== 'function') return value;
    if (streamClasses[key] !== undefined) return guardClass(key, value);
    return matches(upperFirst, key) ? value : guardCall(key, value);
  };
  const guardFs = (real, lazy) => {
    const guarded = {};
    const keys = keysOf(real);
    for (let index = 0; index < keys.length; index++) {
      const key = keys[index];
      const descriptor = describeProperty(real, key);
      if (descriptor !== undefined && !('value' in descriptor)) {
        let resolved = false;
        let value;
        defineProperty(guarded, key, {
          enumerable: true,
          get: () => {
            if (!resolved) {
              value = key === 'promises' ? lazy(key) : guardValue(key, lazy(key));
              resolved = true;
            }
            return value;
          },
        });
        continue;
      }
      own(guarded, key, guardValue(key, real[key]));
    }
    return freeze(guarded);
  };
  let guardedFsPromises = null;
  const fsPromises = () => {
    if (guardedFsPromises === null) {
      const real = fs.promises;
      guardedFsPromises = guardFs(real, (key) => real[key]);
    }
    return guardedFsPromises;
  };
  // fs.promises is the guarded fs/promises too (both report paths outside the work dir).
  let guardedFs = null;
  const fsModule = () => {
    if (guardedFs === null) {
      guardedFs = guardFs(fs, (key) => (key === 'promises' ? fsPromises() : fs[key]));
    }
    return guardedFs;
  };
  const denied = {
    __proto__: null,
    child_process: 'process', cluster: 'process', worker_threads: 'process',
    net: 'network', tls: 'network', dgram: 'network', dns: 'network', 'dns/promises': 'network',
    http: 'network', https: 'network', http2: 'network', inspector: 'tamper',
    'inspector/promises': 'tamper', v8: 'tamper', module: 'tamper', repl: 'tamper',
    wasi: 'tamper', trace_events: 'tamper', async_hooks: 'tamper',
  };
  const allowed = { __proto__: null };
  for (const name of [
    'assert', 'assert/strict', 'buffer', 'crypto', 'events', 'os', 'path', 'path/posix',
    'perf_hooks', 'querystring', 'readline', 'stream', 'stream/promises', 'string_decoder',
    'timers', 'timers/promises', 'url', 'util', 'util/types', 'vm', 'zlib',
  ]) allowed[name] = true;
  // vm without constants.USE_MAIN_CONTEXT_DEFAULT_LOADER (a private symbol, reachable only here):
  // with it a script's import() loads the real, unguarded node:fs.
  let guardedVm = null;
  const vmModule = () => {
    if (guardedVm === null) {
      guardedVm = {};
      const keys = keysOf(vm);
      for (let index = 0; index < keys.length; index++) own(guardedVm, keys[index], vm[keys[index]]);
      const constants = { __proto__: null };
      const names = vm.constants ? keysOf(vm.constants) : [];
      for (let index = 0; index < names.length; index++) {
        if (names[index] !== 'USE_MAIN_CONTEXT_DEFAULT_LOADER') {
          constants[names[index]] = vm.constants[names[index]];
        }
      }
      own(guardedVm, 'constants', freeze(constants));
      freeze(guardedVm);
    }
    return guardedVm;
  };
  const realRequire = require;
  const makeRequire = () =>
    function require(specifier) {
      let name = String_(specifier);
      if (apply(startsWith, name, ['node:'])) name = clean(name).slice(5);
      if (name === 'fs') return fsModule();
      if (name === 'fs/promises') return fsPromises();
      if (name === 'vm') return vmModule();
      if (hasOwn(denied, name)) throw violation(denied[name], 'require ' + name);
      if (allowed[name] === true) return realRequire(name);
      const error = new Error_(
        "Cannot find module '" + clean(specifier) + "' (the sandbox allows Node builtins only)",
      );
      error.code = 'MODULE_NOT_FOUND';
      throw error;
    };
  // stdout and stderr are blocking: a write returns once the bytes are in the pipe, never queued in
  // memory (where an exit would drop them), so every byte the program writes reaches the host's
  // byte counter before the harness can report. Set up on first access (creating the streams
  // costs a few ms); the handles' setBlocking then ignores its argument.
  const getPrototypeOf = Object.getPrototypeOf;
  let blockingOwner = null;
  const makeBlocking = (stream) => {
    const slot = describeProperty(stream, '_handle');
    const handle = slot !== undefined && 'value' in slot ? slot.value : null;
    if (handle === null || typeof handle !== 'object') {
      if (slot !== undefined && !('value' in slot)) emit('V tamper stdio handle accessor');
      return;
    }
    let owner = handle;
    while (owner !== null && !hasOwn(owner, 'setBlocking')) owner = getPrototypeOf(owner);
    if (owner === null) return;
    if (owner !== blockingOwner) {
      const native = owner.setBlocking;
      defineProperty(owner, 'setBlocking', {
        value: function setBlocking() {
          return apply(native, this, [true]);
        },
        writable: false,
        configurable: false,
      });
      blockingOwner = owner;
    }
    apply(owner.setBlocking, handle, [true]);
  };
  for (const name of ['stdout', 'stderr']) {
    const slot = describeProperty(process, name);
    if (slot === undefined || typeof slot.get !== 'function') continue;
    const get = slot.get;
    let stream;
    defineProperty(process, name, {
      enumerable: slot.enumerable,
      configurable: false,
      get() {
        if (stream === undefined) {
          stream = apply(get, process, []);
          makeBlocking(stream);
        }
        return stream;
      },
    });
  }
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
  const testRequire = makeRequire();

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
  const privateAssert = (...args) => apply(realAssert, undefined, args);
  for (const key of Object.keys(realAssert)) privateAssert[key] = realAssert[key];
  Object.freeze(privateAssert);

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
      emit(nonce + ' S ' + passed + ' ' + total);
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
