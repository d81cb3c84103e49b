import { PYTHON_ASSERTION_HELPERS } from './harness-python-assertions.js';

/**
 * The Python test harness, run inside the sandbox as `python3 -I -S -B -X utf8 -c <PYTHON_BOOT>`
 * with the harness compiled once per interpreter on the host (`marshal`) and sent ahead of the
 * payload, or as `-c <PYTHON_HARNESS>` where that could not be built. No file: nothing to mount,
 * nothing left in the temp dir.
 *
 * Protocol (see `docs/code-sandbox.md`): the host writes one length-prefixed payload to stdin: a
 * header line of space-separated byte lengths, then the UTF-8 fields back to back —
 * `nonce, workDir, programFile, program, setup, testsKind ('s' string | 'a' array),
 * readRoots (NUL-separated), cgroupFds (count), ...tests`. No `json` import: it costs ~10 ms
 * (json → re → enum) on every run. The harness reads the payload whole, points fd 0 at /dev/null,
 * joins the run's cgroup(s) through the `cgroup.procs` descriptors the host opened (fds 4, 5: the
 * kernel checks the opener's credentials, so the unprivileged sandbox user can join a group only
 * root may move processes into) and closes them, compiles every test and the program BEFORE the
 * program runs, installs an audit hook, runs the program, then the tests, and reports on fd 3 in
 * lines:
 *   `<nonce> N <total>`                             the number of countable tests,
 *   `<nonce> T <index> pass|fail|error <message>`  after each test,
 *   `<nonce> S <passed> <total> <assertions>`       after the last test (the only way to `pass`;
 *                                                   `assertions`: asserts executed, see below),
 *   `<nonce> E load|setup <kind> <message>`         when the program (or setup) cannot run,
 *   `V <kind> <detail>`                             a violation (unsigned: forging one only hurts).
 * Secrets (nonce, test code) live only in `_rlvr_main`'s frame; frame access is denied by the hook,
 * and they are never passed to code the program could have patched (only C builtins captured
 * before the program ran touch them).
 * @internal
 */
export const PYTHON_HARNESS = String.raw`
import sys, os
${PYTHON_ASSERTION_HELPERS}

def _rlvr_main():
    import builtins, math, operator, itertools, types
    _write = os.write
    _exit = os._exit
    _realpath = os.path.realpath
    _isinstance = isinstance
    _str = str
    _len = len
    _exec = exec
    _compile = compile
    _import = __import__
    _type = type
    _BaseException = BaseException
    _AssertionError = AssertionError
    _MemoryError = MemoryError
    _RecursionError = RecursionError
    _SystemExit = SystemExit
    _stdout = sys.stdout
    _stderr = sys.stderr
    chunks = []
    while True:
        chunk = os.read(0, 1 << 20)
        if not chunk:
            break
        chunks.append(chunk)
    data = b''.join(chunks)
    del chunks
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    fields = []
    try:
        newline = data.index(b'\n')
        position = newline + 1
        for size in data[:newline].split():
            end = position + int(size)
            fields.append(data[position:end].decode('utf-8'))
            position = end
    except _BaseException:
        _exit(2)
    del data
    if _len(fields) < 9:
        _exit(2)
    nonce = fields[0]
    work_dir = fields[1]
    program_file = fields[2]
    program_source = fields[3]
    setup_source = fields[4]
    tests_kind = fields[5]
    read_roots = tuple(fields[6].split('\0'))
    cgroup_fds = int(fields[7])
    raw_tests = fields[8:]
    del fields
    write_roots = (work_dir,)

    def clean(text):
        text = _str(text).replace('\n', ' ').replace('\r', ' ')
        return text[:300]

    def emit(line):
        try:
            _write(3, (line + '\n').encode('utf-8', 'replace'))
        except _BaseException:
            pass

    def describe(error):
        try:
            return clean(_type(error).__name__ + ': ' + _str(error))
        except _BaseException:
            return 'unprintable exception'

    # --- join the run's cgroup(s) before any program code runs ------------------------------
    for fd in range(4, 4 + cgroup_fds):
        try:
            _write(fd, b'0')
            os.close(fd)
        except _BaseException as error:
            emit(nonce + ' E setup error cannot join the run cgroup: ' + describe(error))
            _exit(0)

    # --- compile tests and the program (before any program code runs) -----------------------
    # Test-side code is parsed (PyCF_ONLY_AST: ast.parse without importing ast, enum, re...) and
    # every assert counts itself (see harness-python-assertions.ts) before it is compiled.
    import _ast
    count_asserts = _rlvr_count_asserts

    def parse(source, filename):
        return count_asserts(_compile(source, filename, 'exec', 0x400, True, 0), _ast)

    tests = []  # (kind, code) with kind 'test' or 'setup'
    try:
        if setup_source:
            tests.append(('setup', _compile(parse(setup_source, '<setup>'), '<setup>', 'exec', 0, True, 0)))
        if tests_kind == 's':
            tree = parse(raw_tests[0], '<tests>')
            pending = []
            for node in tree.body:
                if _isinstance(node, (_ast.Assert, _ast.Expr)):
                    if pending:
                        module = _ast.Module(body=pending, type_ignores=[])
                        tests.append(('setup', _compile(module, '<tests>', 'exec', 0, True, 0)))
                        pending = []
                    module = _ast.Module(body=[node], type_ignores=[])
                    tests.append(('test', _compile(module, '<tests>', 'exec', 0, True, 0)))
                else:
                    pending.append(node)
            if pending:
                module = _ast.Module(body=pending, type_ignores=[])
                tests.append(('setup', _compile(module, '<tests>', 'exec', 0, True, 0)))
        else:
            for source in raw_tests:
                tests.append(('test', _compile(parse(source, '<test>'), '<test>', 'exec', 0, True, 0)))
    except _BaseException as error:
        emit(nonce + ' E setup error ' + describe(error))
        _exit(0)
    total = 0
    for kind, _code in tests:
        if kind == 'test':
            total += 1
    emit(nonce + ' N ' + _str(total))
    program_code = None
    program_error = None
    try:
        program_code = _compile(program_source, program_file, 'exec', 0, True, 0)
    except _BaseException as error:
        program_error = error
    del raw_tests, setup_source, program_source

    # --- modules to watch: the stdlib modules the tests or the program name ------------------
    # Names (globals, attributes, imports) and string constants of every compiled code object;
    # such modules are imported now, pristine, and snapshotted with everything they pulled in.
    code_type = _type(_compile('0', '<rlvr>', 'eval'))
    names = set()
    pending_codes = [code for _kind, code in tests]
    if program_code is not None:
        pending_codes.append(program_code)
    while pending_codes:
        code = pending_codes.pop()
        for name in code.co_names:
            names.add(name.partition('.')[0])
        for const in code.co_consts:
            if _type(const) is code_type:
                pending_codes.append(const)
            elif _type(const) is _str and _len(const) < 32:
                names.add(const)
    watchable = (
        'math', 'operator', 'itertools', 'functools', 'collections', 'json', 're', 'string',
        'heapq', 'bisect', 'random', 'statistics', 'fractions', 'decimal', 'cmath',
    )
    for name in watchable:
        if name in names:
            try:
                _import(name)
            except _BaseException:
                pass
    # Assertions the tests execute, and failures unittest reported (its runners swallow them).
    asserted = [0]
    unittest_failures = [0]

    def count_assert(value):
        asserted[0] += 1
        return value

    test_globals = {}
    unittest_watch = ()
    if 'unittest' in names:
        try:
            unittest_watch = _rlvr_unittest_hooks(
                _import('unittest'), asserted, unittest_failures, test_globals
            )
        except _BaseException:
            pass
    del names, pending_codes

    # --- audit hook: deny-by-default for files, processes, network, introspection --------
    blocked_frames = frozenset(('tb_frame', 'gi_frame', 'cr_frame', 'ag_frame', 'f_code', 'f_back'))
    process_events = frozenset((
        'os.system', 'os.exec', 'os.fork', 'os.forkpty', 'os.posix_spawn', 'os.spawn',
        'subprocess.Popen', 'pty.spawn', 'os.startfile',
    ))
    network_events = frozenset((
        'socket.getaddrinfo', 'socket.gethostbyname', 'socket.gethostbyaddr', 'socket.gethostname',
        'socket.getnameinfo', 'socket.getservbyname', 'socket.getservbyport', 'socket.sethostname',
        'socket.connect', 'socket.bind', 'socket.sendto', 'socket.sendmsg',
    ))
    tamper_events = frozenset((
        'gc.get_objects', 'gc.get_referrers', 'gc.get_referents', 'sys.addaudithook',
        'ctypes.dlopen', 'ctypes.dlsym', 'ctypes.cdata', 'ctypes.call_function',
        'ctypes.string_at', 'ctypes.wstring_at', 'ctypes.addressof', 'ctypes.cdata/buffer',
        'sys.settrace', 'sys.setprofile', 'sys._current_frames', 'sys.remote_exec',
        'cpython.run_interactivehook', 'cpython._PySys_ClearAuditHooks',
    ))
    blocked_imports = {
        '_posixsubprocess': 'process', 'multiprocessing': 'process', '_ctypes': 'tamper',
        'ctypes': 'tamper', '_testcapi': 'tamper', '_testinternalcapi': 'tamper',
    }
    write_events = frozenset((
        'os.remove', 'os.rename', 'os.mkdir', 'os.rmdir', 'os.symlink', 'os.link', 'os.truncate',
        'os.chmod', 'os.chown', 'os.utime', 'os.chflags', 'os.lchflags', 'os.mkfifo', 'os.mknod',
        'shutil.rmtree', 'shutil.copyfile', 'shutil.copymode', 'shutil.copystat', 'shutil.move',
        'shutil.chown', 'shutil.unpack_archive', 'shutil.make_archive', 'os.setxattr',
        'os.removexattr',
    ))
    read_events = frozenset(('os.listdir', 'os.scandir', 'os.listxattr', 'os.getxattr', 'glob.glob'))
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
    armed = [False]

    def inside(path, roots):
        if _isinstance(path, int):
            return True
        if path is None:
            path = '.'
        try:
            if _isinstance(path, bytes):
                path = path.decode('utf-8', 'replace')
            resolved = _realpath(os.fspath(path))
        except _BaseException:
            return False
        for root in roots:
            if resolved == root or resolved.startswith(root + '/'):
                return True
        return False

    def violate(kind, detail):
        emit('V ' + kind + ' ' + clean(detail))
        raise PermissionError('[rlvr sandbox] ' + kind + ' denied: ' + clean(detail))

    def hook(event, args):
        if event == 'sys._getframe':
            if armed[0]:
                raise ValueError('call stack is not available in the sandbox')
            return
        if event == 'object.__getattr__':
            if armed[0] and _len(args) > 1 and args[1] in blocked_frames:
                raise AttributeError('frame access is not available in the sandbox')
            return
        if not armed[0]:
            return
        if event == 'open':
            path = args[0]
            mode = args[1] if _len(args) > 1 else None
            flags = args[2] if _len(args) > 2 else 0
            writing = (_isinstance(flags, int) and (flags & write_flags)) or (
                _isinstance(mode, _str) and ('w' in mode or 'a' in mode or '+' in mode or 'x' in mode)
            )
            if writing:
                if not inside(path, write_roots):
                    violate('file-write', _str(path))
            elif not inside(path, read_roots):
                violate('file-read', _str(path))
            return
        if event in read_events:
            if args and not inside(args[0], read_roots):
                violate('file-read', _str(args[0]))
            return
        if event in write_events:
            for item in args[:2]:
                if (_isinstance(item, (_str, bytes)) or hasattr(item, '__fspath__')) and not inside(item, write_roots):
                    violate('file-write', _str(item))
            return
        if event == 'sqlite3.connect':
            # sqlite opens (and creates) its file in C, without an 'open' event.
            database = args[0] if args else ''
            if _isinstance(database, bytes):
                database = database.decode('utf-8', 'replace')
            database = _str(os.fspath(database)) if database is not None else ''
            if database.startswith('file:'):
                database = database[5:].partition('?')[0]
            if database not in ('', ':memory:') and not inside(database, write_roots):
                violate('file-write', 'sqlite3.connect ' + database)
            return
        if event == 'socket.__new__':
            family = args[1] if _len(args) > 1 else None
            if family != 1:  # AF_UNIX socketpairs (asyncio) stay allowed
                violate('network', 'socket(family=' + _str(family) + ')')
            return
        if event in network_events:
            violate('network', event + ' ' + _str(args[:1]))
        if event in process_events:
            violate('process', event)
        if event in tamper_events:
            violate('tamper', event)
        if event == 'fcntl.fcntl' and args[0] in (1, 2) and args[1] == 4 and _isinstance(args[2], int) and (args[2] & os.O_NONBLOCK):
            violate('tamper', 'fcntl O_NONBLOCK on fd ' + _str(args[0]))
        if event == 'import':
            kind = blocked_imports.get(args[0])
            if kind is not None:
                violate(kind, 'import ' + _str(args[0]))

    sys.addaudithook(hook)

    # stdout and stderr stay blocking: a non-blocking one drops what the pipe cannot take at once,
    # which would make the output cap depend on how fast the host reads.
    import posix
    _set_blocking = posix.set_blocking
    _get_blocking = posix.get_blocking
    _index = operator.index

    def set_blocking(fd, blocking):
        fd = _index(fd)
        if fd in (1, 2) and not blocking:
            violate('tamper', 'set_blocking(' + _str(fd) + ', False)')
        return _set_blocking(fd, blocking)

    os.set_blocking = posix.set_blocking = set_blocking

    # --- pristine state the tests use, and a snapshot to detect tampering --------------------
    pristine_builtins = dict(builtins.__dict__)
    loaded = sys.modules
    watched = [builtins] + [loaded[name] for name in watchable if name in loaded] + list(unittest_watch)
    snapshots = [(module, dict(module.__dict__)) for module in watched]

    def tampered():
        for module, snapshot in snapshots:
            current = module.__dict__
            for key, value in snapshot.items():
                if key in ('__loader__', '__spec__', '_'):
                    continue
                if current.get(key, snapshot) is not value:
                    return module.__name__ + '.' + _str(key)
        return None

    # --- run the program -------------------------------------------------------------------
    namespace = {'__name__': 'solution', '__file__': program_file, '__builtins__': builtins}
    armed[0] = True
    try:
        if program_error is not None:
            raise program_error
        _exec(program_code, namespace)
    except _SystemExit as error:
        emit(nonce + ' E load exit program exited before the tests ran (code ' + clean(error.code) + ')')
        _exit(0)
    except _MemoryError as error:
        emit(nonce + ' E load memory ' + describe(error))
        _exit(0)
    except _BaseException as error:
        emit(nonce + ' E load error ' + describe(error))
        _exit(0)
    what = tampered()
    if what is not None:
        emit('V tamper modified ' + what)

    # --- run the tests ---------------------------------------------------------------------
    test_globals.update(namespace)
    test_globals['__builtins__'] = pristine_builtins
    test_globals['__name__'] = '__tests__'
    test_globals['__rlvr_assert__'] = count_assert
    passed = 0
    index = 0
    for kind, code in tests:
        status = 'pass'
        message = ''
        failures_before = unittest_failures[0]
        try:
            _exec(code, test_globals)
        except _AssertionError as error:
            status = 'fail'
            message = describe(error)
        except _SystemExit as error:
            status = 'fail'
            message = 'SystemExit: the program tried to exit during the test'
        except _MemoryError as error:
            status = 'memory'
            message = describe(error)
        except _BaseException as error:
            status = 'error'
            message = describe(error)
        if status == 'pass' and unittest_failures[0] > failures_before:
            status = 'fail'
            message = 'AssertionError: unittest reported ' + _str(unittest_failures[0] - failures_before) + ' failure(s) or error(s)'
        if kind == 'setup':
            if status != 'pass':
                emit(nonce + ' E setup ' + status + ' ' + message)
                _exit(0)
            continue
        if status == 'pass':
            passed += 1
        emit(nonce + ' T ' + _str(index) + ' ' + status + ' ' + message)
        index += 1
    what = tampered()
    if what is not None:
        emit('V tamper modified ' + what)
    try:
        _stdout.flush()
        _stderr.flush()
    except _BaseException:
        pass
    for fd in (1, 2):
        try:
            if not _get_blocking(fd):
                emit('V tamper fd ' + _str(fd) + ' was made non-blocking')
        except _BaseException:
            pass
    emit(nonce + ' S ' + _str(passed) + ' ' + _str(total) + ' ' + _str(asserted[0]))
    # Like a normal interpreter exit (and a judge), wait for the program's non-daemon threads: one
    # that never ends runs into the wall-clock limit.
    threading = loaded.get('threading')
    if threading is not None:
        try:
            threading._shutdown()
        except _BaseException:
            pass
    _exit(0)

_rlvr_main()
`;

/**
 * Loader for the precompiled harness: stdin starts with `<byte length>\n<marshal bytes>`; it runs
 * that code object (which then reads the payload that follows). The bytes come from the trusted
 * interpreter on the host (see `discoverRuntime`), before any program code exists.
 * @internal
 */
export const PYTHON_BOOT = String.raw`
import os, marshal
_b = b''
while _b[-1:] != b'\n':
    _c = os.read(0, 1)
    if not _c:
        os._exit(2)
    _b += _c
_n = int(_b)
_b = b''
while len(_b) < _n:
    _c = os.read(0, _n - len(_b))
    if not _c:
        os._exit(2)
    _b += _c
del _c, _n
exec(marshal.loads(_b))
`;
