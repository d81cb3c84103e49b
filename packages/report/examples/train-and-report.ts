import {
  createConsoleSink,
  createCsvSink,
  createTensorBoardSink,
  fanOut,
  writeRunReport,
} from '@rlvr/report';
import type { GrpoTrainer } from '@rlvr/trainer';

/**
 * Runs GRPO step by step and sends each metrics record to a CSV file, a TensorBoard event file
 * and the console (GrpoTrainer itself appends it to metrics.jsonl), then writes the run page.
 */
export async function trainAndReport(grpo: GrpoTrainer, runDir: string, steps: number) {
  const sink = fanOut([
    await createCsvSink({ path: `${runDir}/metrics.csv` }),
    await createTensorBoardSink({ logDir: `${runDir}/tensorboard` }), // tensorboard --logdir …
    createConsoleSink({ every: 10 }), // "[train] step 10 (4.2s) loss=… reward/mean=…"
  ]);
  try {
    for (let step = 0; step < steps; step++) await sink.write(await grpo.step());
  } finally {
    await sink.close();
  }
  // Charts of every metric, the latest completions with their rewards, checkpoints, the config.
  return writeRunReport(runDir); // { path: `${runDir}/report.html`, bytes }
}
