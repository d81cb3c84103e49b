import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildCharTokenizer, createTokenizer } from '@rlvr/model';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../errors/config-error.js';
import { DatasetError } from '../errors/dataset-error.js';
import { loadDataset, toPromptRecords } from './load-dataset.js';

const dir = mkdtempSync(join(tmpdir(), 'rlvr-data-'));
function file(name: string, content: string | Uint8Array): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

async function datasetError(promise: Promise<unknown>): Promise<DatasetError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  if (!DatasetError.isInstance(error))
    throw new Error(`expected a DatasetError, got ${String(error)}`);
  return error;
}

const expected = [
  { id: 'q1', prompt: '2+2=', answer: '4' },
  { id: 'q2', prompt: '3+4=', answer: '7' },
];

describe('loadDataset', () => {
  it('should read JSONL with a BOM and CRLF line ends, mapping columns', async () => {
    const path = file(
      'train.jsonl',
      '\uFEFF{"uid":"q1","question":"2+2=","solution":"4"}\r\n\r\n{"uid":"q2","question":"3+4=","solution":"7"}\r\n',
    );
    const records = await loadDataset(
      { path, columns: { id: 'uid', prompt: 'question', answer: 'solution' } },
      { need: ['prompt'] },
    );
    expect(toPromptRecords(records)).toEqual(expected);
    expect(records.map((record) => record.line)).toEqual([1, 3]);
  });

  it('should read a JSON array and give rows without an id the file name and row', async () => {
    const path = file(
      'train.json',
      JSON.stringify([
        { prompt: '2+2=', answer: 4, level: 1 },
        { prompt: '3+4=', answer: 7 },
      ]),
    );
    const records = toPromptRecords(await loadDataset(path, { need: ['prompt'] }));
    expect(records).toEqual([
      { id: 'train.json:1', prompt: '2+2=', answer: 4, level: 1 },
      { id: 'train.json:2', prompt: '3+4=', answer: 7 },
    ]);
  });

  it('should read CSV with a BOM, CRLF and quoted fields', async () => {
    const path = file(
      'train.csv',
      '\uFEFFid,question,solution\r\nq1,2+2=,4\r\nq2,"3+4=",7\r\nq3,"say ""hi"", then\r\nstop",hi\r\n',
    );
    const records = await loadDataset(
      { path, columns: { prompt: 'question', answer: 'solution' } },
      { need: ['prompt'] },
    );
    expect(toPromptRecords(records).slice(0, 2)).toEqual(expected);
    expect(records[2]!.prompt).toBe('say "hi", then\r\nstop');
    expect(records.map((record) => record.line)).toEqual([2, 3, 4]);
  });

  it('should read Parquet (written here with hyparquet-writer), numbers and all', async () => {
    const bytes = parquetWriteBuffer({
      columnData: [
        { name: 'id', data: ['q1', 'q2'], type: 'STRING' },
        { name: 'question', data: ['2+2=', '3+4='], type: 'STRING' },
        { name: 'solution', data: ['4', '7'], type: 'STRING' },
        { name: 'difficulty', data: [BigInt(1), BigInt(2)], type: 'INT64' },
      ],
    });
    const path = file('train.parquet', new Uint8Array(bytes));
    const records = toPromptRecords(
      await loadDataset(
        { path, columns: { prompt: 'question', answer: 'solution' } },
        { need: ['prompt'] },
      ),
    );
    expect(records).toEqual(
      expected.map((record, index) => ({ ...record, difficulty: index + 1 })),
    );
  });

  it('should render chat-message prompts with the tokenizer chat template', async () => {
    const tokenizer = createTokenizer(
      buildCharTokenizer({
        characters: 'abc:|',
        chatTemplate:
          '{% for m in messages %}{{ m.role[0] }}:{{ m.content }}|{% endfor %}{% if add_generation_prompt %}a:{% endif %}',
      }),
    );
    const path = file(
      'chat.jsonl',
      `${JSON.stringify({
        id: 1,
        prompt: [
          { role: 'system', content: 'c' },
          { role: 'user', content: 'ab' },
        ],
      })}\n`,
    );
    const [record] = await loadDataset(path, { need: ['prompt'], chat: tokenizer });
    expect(record).toMatchObject({ id: '1', prompt: 's:c|u:ab|a:' });
    const plain = createTokenizer(buildCharTokenizer({ characters: 'abc' }));
    const error = await datasetError(loadDataset(path, { need: ['prompt'], chat: plain }));
    expect(error.message).toMatch(/chat\.jsonl:1: .*no chat template/);
  });

  it('should take completions as text or assistant messages (SFT rows)', async () => {
    const path = file(
      'sft.jsonl',
      [
        JSON.stringify({ prompt: 'p', completion: 'c' }),
        JSON.stringify({ prompt: 'p', completion: [{ role: 'assistant', content: 'd' }] }),
      ].join('\n'),
    );
    const records = await loadDataset(path, { need: ['prompt', 'completion'] });
    expect(records.map((record) => record.completion)).toEqual(['c', 'd']);
  });

  it('should name the file and line of a bad row in every format', async () => {
    const cases: [string, string | Uint8Array, RegExp][] = [
      ['bad.jsonl', '{"prompt":"a"}\n{"prompt": oops}\n', /bad\.jsonl:2: not valid JSON/],
      ['bad2.jsonl', '{"prompt":"a"}\n\n[1,2]\n', /bad2\.jsonl:3: expected a JSON object/],
      [
        'bad.json',
        JSON.stringify([{ prompt: 'a' }, { prompt: '' }]),
        /bad\.json:2: column 'prompt': expected a non-empty string/,
      ],
      ['bad.csv', 'question\n2+2=\n"unclosed\n', /bad\.csv:\d+: not valid CSV/],
      [
        'missing.csv',
        'prompt,answer\r\na,1\r\n',
        /missing\.csv:2: no column 'question' for the prompt/,
      ],
      [
        'dupe.jsonl',
        '{"id":"x","prompt":"a"}\n{"id":"x","prompt":"b"}\n',
        /dupe\.jsonl:2: duplicate id 'x' \(first at 1\)/,
      ],
      [
        'nocompletion.jsonl',
        '{"prompt":"a","completion":"b"}\n{"prompt":"a"}\n',
        /nocompletion\.jsonl:2: no column 'completion'/,
      ],
    ];
    for (const [name, content, pattern] of cases) {
      const path = file(name, content);
      const columns = name === 'missing.csv' ? { prompt: 'question' } : {};
      const need = name.startsWith('nocompletion')
        ? (['prompt', 'completion'] as const)
        : (['prompt'] as const);
      const error = await datasetError(loadDataset({ path, columns }, { need }));
      expect(error.message).toMatch(pattern);
      expect(error.file).toBe(path);
    }
    const parquet = file('bad.parquet', 'not parquet at all');
    expect((await datasetError(loadDataset(parquet, { need: ['prompt'] }))).message).toMatch(
      /bad\.parquet: not a readable Parquet file/,
    );
  });

  it('should reject a bad dataset config naming the key', async () => {
    const path = file('ok.jsonl', '{"prompt":"a"}\n');
    await expect(
      loadDataset({ path, columns: { question: 'q' } }, { need: ['prompt'], source: 'grpo.yaml' }),
    ).rejects.toSatisfy(
      (error: unknown) =>
        ConfigError.isInstance(error) &&
        /dataset\.columns\.question' \(in grpo\.yaml\)/.test(error.message),
    );
    await expect(loadDataset(file('x.txt', 'a'), { need: ['prompt'] })).rejects.toThrow(
      /unknown dataset format/,
    );
    await expect(loadDataset({ path, limit: 0 }, { need: ['prompt'] })).rejects.toThrow(/limit/);
  });
});
