// Child process of the kill-and-resume test: `node --import tsx grpo-child.ts <dir> <maxSteps>`.
import { selectBackend } from '../backend/select-backend.js';
import { runResumeTask } from './grpo-run.js';

const [dir, steps] = process.argv.slice(2);
await selectBackend({ candidates: ['cpu'] });
await runResumeTask(dir!, { resume: true, maxSteps: Number(steps) });
