import { runTabularGrpo } from './tabular-grpo.js';

const start = performance.now();
console.log(
  'rlvr example: GRPO on a tabular policy learning two-digit addition (all math from @rlvr/core)\n',
);
console.log('step  reward  frac_zero_std  kept  loss      kl        clip');
const { before, after } = runTabularGrpo({
  onStep: (r) => {
    if (r.step % 60 === 0) {
      console.log(
        `${String(r.step).padStart(4)}  ${r.rewardMean.toFixed(3)}   ${r.fracRewardZeroStd.toFixed(3)}          ${String(r.keptGroups).padStart(2)}    ${r.loss.toFixed(4).padStart(7)}  ${r.kl.toExponential(2)}  ${r.clipRatio.toFixed(3)}`,
      );
    }
  },
});
const pct = (x: number) => `${(100 * x).toFixed(1)}%`.padStart(7);
console.log('\n          pass@1   pass@8   maj@8');
console.log(`before  ${pct(before.passAt1)}  ${pct(before.passAt8)}  ${pct(before.majAt8)}`);
console.log(`after   ${pct(after.passAt1)}  ${pct(after.passAt8)}  ${pct(after.majAt8)}`);
console.log(`\ndone in ${((performance.now() - start) / 1000).toFixed(2)} s`);
