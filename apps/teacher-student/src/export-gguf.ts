import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type Checkpoint, writeGgufModel } from '@rlvr/model';

/**
 * Exports the distilled student as GGUF (`<outDir>/gguf/distilled-student/model.gguf`, f32) with an
 * Ollama `Modelfile` beside it, so the small model runs in llama.cpp / Ollama / LM Studio.
 * The files belong to the run folder: they are replaced only when the student was (re)trained in
 * this run (`replace`); an existing export of a resumed student is kept as it is.
 */
export async function exportStudentGguf(
  outDir: string,
  student: Checkpoint,
  replace: boolean,
): Promise<{ path: string; written: boolean }> {
  const dir = join(outDir, 'gguf', 'distilled-student');
  const path = join(dir, 'model.gguf');
  if (existsSync(path) && !replace) return { path, written: false };
  await writeGgufModel(dir, student, { dtype: 'f32', overwrite: true });
  await writeFile(
    join(dir, 'Modelfile'),
    [
      '# ollama create rlvr-student -f Modelfile && ollama run rlvr-student "(3+5-9+2)%10="',
      '# llama.cpp: llama-cli -m model.gguf -p "(3+5-9+2)%10=" -n 64 --temp 0',
      'FROM ./model.gguf',
      'PARAMETER temperature 0',
      'PARAMETER stop "</answer>"',
      '',
    ].join('\n'),
  );
  return { path, written: true };
}
