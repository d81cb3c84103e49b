/**
 * The guards of the JavaScript harness (`harness-javascript.ts`), spliced into its closure: they
 * use the natives it captured before any program code exists (`apply`, `hasOwn`, `startsWith`,
 * `String_`, `Error_`, `URL_`, `isBuffer`, `resolvePath`, `realpathSync`, `existsSync`, `fs`, `vm`,
 * `workDir`, `emit`, `clean`). They define:
 * - `violation(kind, detail)`: reports `V <kind> <detail>` on the result channel and returns the
 *   error to throw;
 * - guarded copies of `fs` and `fs/promises` (`fsModule()`, `fsPromises()`): every function —
 *   values and lazily defined accessors (`opendir`, the stream classes) alike — reports and denies a
 *   path outside the work dir, as a read or a write by name and open flags;
 * - `vmModule()`: `vm` without the main-context loader constant (a script's `import()` would load
 *   the real `fs`);
 * - `makeRequire(own)`: the builtin allowlist; denied modules report their kind; `own` maps names
 *   to the tests' own modules (their counting `assert`);
 * - blocking `process.stdout`/`stderr` on first use (bytes are never queued in memory, so the host
 *   counts every byte the program writes) with `setBlocking` pinned to blocking;
 * - the natives later parts need: `keysOf`, `describeProperty`, `defineProperty`, `freeze`,
 *   `matches`, `upperFirst`, `own`.
 * @internal
 */
export const JAVASCRIPT_GUARDS = String.raw`  // --- guards -------------------------------------------------------------------------------
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
  const makeRequire = (own) =>
    function require(specifier) {
      let name = String_(specifier);
      if (apply(startsWith, name, ['node:'])) name = clean(name).slice(5);
      if (own !== undefined && own[name] !== undefined) return own[name];
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
`;
