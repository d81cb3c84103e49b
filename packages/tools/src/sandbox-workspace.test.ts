import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createSandboxWorkspace } from './sandbox-workspace.js';
import { createToolEnvironment } from './tool-environment.js';

const INPUT = { prompt: 'p', promptIndex: 0, sampleIndex: 0, trajectoryId: 't-0-0' };
const call = (code: string) => ({
  index: 0,
  text: '',
  toolCalls: [{ name: 'python', arguments: { code } }],
  malformedToolCalls: [],
  finishReason: 'tool-call' as const,
});

describe('createSandboxWorkspace', () => {
  it('keeps one workspace per trajectory, read-only tests stay unchanged, limits are typed', async () => {
    const workspaces: ReturnType<typeof createSandboxWorkspace>[] = [];
    const factory = createToolEnvironment({
      setup: () => {
        const workspace = createSandboxWorkspace({
          files: { 'tests/test_add.py': 'from solution import add\nassert add(1, 2) == 3\n' },
          readOnly: ['tests'],
          limits: { wallTimeMs: 1000, outputBytes: 4096 },
        });
        workspaces.push(workspace);
        return { tools: [workspace.tool], close: () => workspace.close() };
      },
    });
    const first = await factory(INPUT);
    const other = await factory({ ...INPUT, sampleIndex: 1, trajectoryId: 't-0-1' });
    const write = await first.step(
      call("open('solution.py','w').write('def add(a, b):\\n    return a + b\\n')"),
    );
    expect(write.toolResults?.[0]?.status).toBe('ok');
    const run = await first.step(
      call("import runpy; runpy.run_path('tests/test_add.py'); print('passed')"),
    );
    expect(run.messages[0]?.content).toMatch(/exit code 0\nstdout:\npassed/);
    // the other trajectory's workspace has no solution.py
    const elsewhere = await other.step(call("import os; print(sorted(os.listdir('.')))"));
    expect(elsewhere.messages[0]?.content).toMatch(/\['tests'\]/);
    const tamper = await first.step(call("open('tests/test_add.py','w').write('assert True')"));
    expect(tamper.messages[0]?.content).toMatch(/Read-only file system/);
    expect(workspaces[0]!.read('tests/test_add.py')).toMatch(/add\(1, 2\) == 3/);
    const slow = await first.step(call('while True: pass'));
    expect(slow.toolResults?.[0]?.status).toBe('timeout');
    const flood = await first.step(call("print('x' * 10_000_000)"));
    expect(flood.toolResults?.[0]?.status).toBe('output-limit');
    expect(workspaces[0]!.files()).toEqual(['solution.py', 'tests/test_add.py']);
    await first.close?.();
    await other.close?.();
    expect(existsSync(workspaces[0]!.dir)).toBe(false);
  });

  it('names bad files and read-only paths', () => {
    expect(() => createSandboxWorkspace({ files: { '../x': '' } })).toThrow(/options\.files/);
    expect(() => createSandboxWorkspace({ readOnly: ['missing'] })).toThrow(
      /options\.readOnly\[0\]/,
    );
  });
});
