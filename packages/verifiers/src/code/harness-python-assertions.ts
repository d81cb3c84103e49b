/**
 * Module-level helpers of the Python harness (`harness-python.ts`) that make a suite count the
 * assertions it executes: a suite that ends without executing one cannot tell right from wrong
 * and ends as `error`. Both run BEFORE the program, and what they install are closures, so the
 * program cannot reach or swap them later (replacing these module-level names changes nothing).
 *
 * - `_rlvr_count_asserts(tree, _ast)`: wraps the condition of every `assert` statement of a parsed
 *   test (nested in functions, classes, loops, `try`, `match` included) in a call of
 *   `__rlvr_assert__`, which counts and returns the value unchanged. Statements only: no
 *   expression is visited, so large literals in tests cost nothing.
 * - `_rlvr_unittest_hooks(unittest, counter, failures, namespace)`: counts `TestCase.assert*` and
 *   `fail` calls (once per call made by the test, not for the asserts they call internally), counts
 *   failures, errors, failing subtests and unexpected successes reported to any `TestResult` (a
 *   runner that swallows them no longer hides them; failures are formatted without frames, which
 *   the sandbox does not expose), and makes `unittest.main()` run the test cases defined by the
 *   tests without exiting.
 * @internal
 */
export const PYTHON_ASSERTION_HELPERS = String.raw`
def _rlvr_count_asserts(tree, _ast):
    stack = [tree]
    while stack:
        node = stack.pop()
        if type(node) is _ast.Assert:
            test = node.test
            name = _ast.Name(id='__rlvr_assert__', ctx=_ast.Load())
            call = _ast.Call(func=name, args=[test], keywords=[])
            for target in (name, call):
                target.lineno = test.lineno
                target.col_offset = test.col_offset
                target.end_lineno = test.end_lineno
                target.end_col_offset = test.end_col_offset
            node.test = call
            continue
        for field in ('body', 'orelse', 'finalbody', 'handlers', 'cases'):
            children = getattr(node, field, None)
            if type(children) is list:
                stack.extend(children)
    return tree

def _rlvr_unittest_hooks(unittest, counter, failures, namespace):
    import types
    depth = [0]

    def counted(method):
        def assertion(*args, **kwargs):
            if depth[0] == 0:
                counter[0] += 1
            depth[0] += 1
            try:
                return method(*args, **kwargs)
            finally:
                depth[0] -= 1
        return assertion

    case = unittest.TestCase
    for name, value in list(vars(case).items()):
        if (name.startswith('assert') or name == 'fail') and callable(value):
            setattr(case, name, counted(value))

    def recorded(method, failed):
        def record(self, *args, **kwargs):
            if failed(args):
                failures[0] += 1
            return method(self, *args, **kwargs)
        return record

    result = unittest.TestResult

    def describe(self, err, test):
        # The stock formatter walks traceback frames, which the sandbox does not expose.
        return type(err[1]).__name__ + ': ' + str(err[1])

    result._exc_info_to_string = describe
    always = lambda args: True
    result.addFailure = recorded(result.addFailure, always)
    result.addError = recorded(result.addError, always)
    result.addUnexpectedSuccess = recorded(result.addUnexpectedSuccess, always)
    result.addSubTest = recorded(result.addSubTest, lambda args: len(args) > 2 and args[2] is not None)
    program = unittest.TestProgram

    def main(*args, **kwargs):
        kwargs['exit'] = False
        if not args and 'module' not in kwargs:
            kwargs['module'] = types.SimpleNamespace(
                **{key: value for key, value in namespace.items() if type(key) is str}
            )
        kwargs.setdefault('argv', ['tests'])
        return program(*args, **kwargs)

    unittest.main = main
    return (unittest, case, result)
`;
