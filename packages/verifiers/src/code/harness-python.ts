/**
 * The Python test harness, run inside the sandbox as `python3 -I -S -B -X utf8 <harness>`.
 *
 * Protocol (see `docs/code-sandbox.md`): the host writes one JSON payload to stdin
 * (`{ nonce, program, tests, setup, workDir, readRoots, programFile }`); the harness reads it whole,
 * points fd 0 at /dev/null, compiles every test BEFORE the program runs, installs an audit hook,
 * runs the program, then the tests, and reports on fd 3 in lines:
 *   `<nonce> T <index> pass|fail|error <message>`  after each test,
 *   `<nonce> S <passed> <total>`                    after the last test (the only way to `pass`),
 *   `<nonce> E load|setup <kind> <message>`         when the program (or setup) cannot run,
 *   `V <kind> <detail>`                             a violation (unsigned: forging one only hurts).
 * Secrets (nonce, test code) live only in `_rlvr_main`'s frame; frame access is denied by the hook,
 * and they are never passed to code the program could have patched (only C builtins captured
 * before the program ran touch them).
 * @internal
 */
export const PYTHON_HARNESS = String.raw`
import sys, os

def _rlvr_main():
    import builtins, json, math, operator, functools, itertools, collections
    _write = os.write
    _exit = os._exit
    _realpath = os.path.realpath
    _isinstance = isinstance
    _str = str
    _len = len
    _exec = exec
    _compile = compile
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
    payload = json.loads(b''.join(chunks))
    del chunks
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    nonce = payload['nonce']
    work_dir = payload['workDir']
    read_roots = tuple(payload['readRoots'])
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

    # --- compile tests (before any program code runs) ---------------------------------------
    tests = []  # (kind, code) with kind 'test' or 'setup'
    try:
        if payload['setup']:
            tests.append(('setup', _compile(payload['setup'], '<setup>', 'exec', 0, True, 0)))
        raw_tests = payload['tests']
        if _isinstance(raw_tests, _str):
            import ast
            tree = ast.parse(raw_tests, '<tests>')
            pending = []
            for node in tree.body:
                if _isinstance(node, (ast.Assert, ast.Expr)):
                    if pending:
                        module = ast.Module(body=pending, type_ignores=[])
                        tests.append(('setup', _compile(module, '<tests>', 'exec', 0, True, 0)))
                        pending = []
                    module = ast.Module(body=[node], type_ignores=[])
                    tests.append(('test', _compile(module, '<tests>', 'exec', 0, True, 0)))
                else:
                    pending.append(node)
            if pending:
                module = ast.Module(body=pending, type_ignores=[])
                tests.append(('setup', _compile(module, '<tests>', 'exec', 0, True, 0)))
        else:
            for source in raw_tests:
                tests.append(('test', _compile(source, '<test>', 'exec', 0, True, 0)))
    except _BaseException as error:
        emit(nonce + ' E setup error ' + describe(error))
        _exit(0)
    total = 0
    for kind, _code in tests:
        if kind == 'test':
            total += 1
    emit(nonce + ' N ' + _str(total))
    program_source = payload['program']
    program_file = payload['programFile']
    del payload, raw_tests

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
        if event == 'import':
            kind = blocked_imports.get(args[0])
            if kind is not None:
                violate(kind, 'import ' + _str(args[0]))

    sys.addaudithook(hook)

    # --- pristine state the tests use, and a snapshot to detect tampering --------------------
    pristine_builtins = dict(builtins.__dict__)
    watched = (builtins, math, operator, functools, itertools, collections, json)
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
        code = _compile(program_source, program_file, 'exec', 0, True, 0)
        _exec(code, namespace)
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
    test_globals = dict(namespace)
    test_globals['__builtins__'] = pristine_builtins
    test_globals['__name__'] = '__tests__'
    passed = 0
    index = 0
    for kind, code in tests:
        status = 'pass'
        message = ''
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
    emit(nonce + ' S ' + _str(passed) + ' ' + _str(total))
    _exit(0)

_rlvr_main()
`;
