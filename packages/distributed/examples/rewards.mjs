// rewards.mjs: the reward functions `rlvr-worker verify --rewards rewards.mjs` serves, by name.
export default {
  exact: ({ completion, answer }) => (completion.trim() === String(answer) ? 1 : 0),
};
