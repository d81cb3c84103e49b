/** Environment variables through which `rlvr-worker` configures its sandboxed processors. */
export const WORKER_ENV = {
  checkpoint: 'RLVR_WORKER_CHECKPOINT',
  weights: 'RLVR_WORKER_WEIGHTS',
  threads: 'RLVR_WORKER_THREADS',
  rewards: 'RLVR_WORKER_REWARDS',
} as const;
