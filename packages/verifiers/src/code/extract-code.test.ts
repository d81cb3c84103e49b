import { describe, expect, it } from 'vitest';
import { extractCode } from './extract-code.js';

describe('extractCode', () => {
  it('should take the last block tagged with the language or an alias', () => {
    const text = 'First:\n```python\nx = 1\n```\nBetter:\n```py\nx = 2\n```\nDone.';
    expect(extractCode(text, { language: 'python' })).toBe('x = 2\n');
    expect(extractCode('```js\nlet a = 1;\n```', { language: 'javascript' })).toBe('let a = 1;\n');
  });

  it('should never pick a block tagged with another language', () => {
    const text = '```python\nprint(1)\n```\n```bash\nrm -rf /\n```';
    expect(extractCode(text, { language: 'python' })).toBe('print(1)\n');
    expect(extractCode('```bash\nls\n```', { language: 'python' })).toBeNull();
  });

  it('should fall back to the last untagged block, and tilde fences', () => {
    expect(extractCode('```\na = 1\n```\ntext\n```\na = 2\n```', { language: 'python' })).toBe(
      'a = 2\n',
    );
    expect(extractCode('~~~python\nb = 3\n~~~', { language: 'python' })).toBe('b = 3\n');
  });

  it('should keep inner shorter fences inside a longer fence', () => {
    const text = '````python\ns = """\n```\n"""\n````';
    expect(extractCode(text, { language: 'python' })).toBe('s = """\n```\n"""\n');
  });

  it('should take an unclosed final block to the end and return null without fences', () => {
    expect(extractCode('```python\ndef f():\n    return 1', { language: 'python' })).toBe(
      'def f():\n    return 1\n',
    );
    expect(extractCode('def f(): return 1', { language: 'python' })).toBeNull();
    expect(extractCode('')).toBeNull();
  });

  it('should not throw on garbage or huge input, and validate its arguments', () => {
    const huge = '```'.repeat(100_000) + 'x'.repeat(1_000_000);
    expect(() => extractCode(huge, { language: 'python' })).not.toThrow();
    expect(() => extractCode(3 as unknown as string)).toThrow(/completion/);
    expect(() => extractCode('', { language: 'ruby' as 'python' })).toThrow(/options\.language/);
  });
});
