import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runInWorkspace } from './workspace-run.js';

const folders: string[] = [];
function workspace(): string {
  const dir = mkdtempSync(join(tmpdir(), 'rlvr-ws-test-'));
  folders.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of folders.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('runInWorkspace', () => {
  it('keeps files between runs in the same workspace', async () => {
    const dir = workspace();
    const first = await runInWorkspace({ code: "open('a.txt','w').write('hi')", workspace: dir });
    expect(first.status).toBe('ok');
    expect(readFileSync(join(dir, 'a.txt'), 'utf8')).toBe('hi');
    const second = await runInWorkspace({ code: "print(open('a.txt').read())", workspace: dir });
    expect(second.stdout).toBe('hi\n');
  });

  it('mounts read-only paths read-only and hides the host', async () => {
    const dir = workspace();
    mkdirSync(join(dir, 'tests'));
    writeFileSync(join(dir, 'tests', 'test_a.py'), 'assert True\n');
    const write = await runInWorkspace({
      code: "open('tests/test_a.py','w').write('x')",
      workspace: dir,
      readOnly: ['tests'],
    });
    expect(write.status).toBe('error');
    expect(write.stderr).toMatch(/Read-only file system/);
    expect(readFileSync(join(dir, 'tests', 'test_a.py'), 'utf8')).toBe('assert True\n');
    const host = await runInWorkspace({ code: "open('/etc/hostname').read()", workspace: dir });
    expect(host.status).toBe('error');
  });

  it('types timeouts, output floods and errors', async () => {
    const dir = workspace();
    const slow = await runInWorkspace({
      code: 'while True: pass',
      workspace: dir,
      limits: { wallTimeMs: 500 },
    });
    expect(slow.status).toBe('timeout');
    const flood = await runInWorkspace({
      code: "import sys\nwhile True: sys.stdout.write('x'*65536)",
      workspace: dir,
      limits: { outputBytes: 1 << 20 },
    });
    expect(flood.status).toBe('output-limit');
    const raise = await runInWorkspace({ code: 'raise ValueError(1)', workspace: dir });
    expect(raise.status).toBe('error');
    expect(raise.stderr).toMatch(/ValueError/);
  });

  it('names bad options', async () => {
    await expect(runInWorkspace({ code: '1', workspace: '/nope/nope' })).rejects.toThrow(
      /options\.workspace/,
    );
    const dir = workspace();
    await expect(runInWorkspace({ code: '1', workspace: dir, readOnly: ['../x'] })).rejects.toThrow(
      /options\.readOnly\[0\]/,
    );
    await expect(
      runInWorkspace({ code: '1', workspace: dir, readonly: [] } as never),
    ).rejects.toThrow(/did you mean 'readOnly'/);
  });
});
