/**
 * The LM head of the native engine, one vocabulary chunk at a time, so that the `[tokens × vocab]`
 * logits never exist whole (at 152k vocabulary × 2,048 tokens one such fp32 tensor is 1.2 GB).
 * The head weight's rows `[offset, offset + Vc)` are a view of the store (no copy).
 * - `stats`: per token, over the chunk's scaled logits `l = h·Wᵀ / T`: the max `m`, `s = Σ e^(l−m)`,
 *   `t = Σ e^(l−m)·l` and the label's logit when it falls in the chunk; the engine combines the
 *   chunks in float64 into the logprob of the label, the log-normalizer and the entropy.
 * - `grads`: given the log-normalizer, the loss weights `w` (−d loss / d logprob) and optionally
 *   the entropy weights `e` (d loss / d entropy) per token: d loss / d logits
 *   `= (w·(softmax − onehot) − e·softmax·(log softmax + H)) / T` (the formula of the tfjs path's
 *   `logitsGradient`), the chunk's weight gradient `[Vc, d]` and d loss / d h (accumulated).
 * - `logits`: the raw logits `[N, Vc]` (temperature 1), for losses on the logits.
 * - `dlogits`: the weight gradient and d h from a given d loss / d logits `[N, Vc]`.
 * Without `weightGrad` (a frozen head) the backward modes return d h only.
 * The final RMSNorm is its own graph (`final-norm`, forward or backward).
 * @internal
 */
import { OnnxDataType, valueInfo } from '@rlvr/model';
import { GraphNodes } from './graph-nodes.js';

/** What a head graph computes (see the file). @internal */
export type HeadGraphMode =
  | { kind: 'stats' }
  | { kind: 'grads'; entropy: boolean; accumulate: boolean; weightGrad: boolean }
  | { kind: 'logits' }
  | { kind: 'dlogits'; accumulate: boolean; weightGrad: boolean }
  | { kind: 'final-norm'; backward: boolean; eps: number; offset: 0 | 1 };

/** An encoded head graph and its input and output names. @internal */
export type HeadGraph = { model: Uint8Array; inputs: string[]; outputs: string[] };

/**
 * The head graph of `mode` for hidden size `hidden`. Inputs: `h` `[N, d]` (the final norm's
 * output), `w` `[Vc, d]`; `stats`: `inv_t` (1 / T), `pick` `[N]` (the label's index in the chunk,
 * clamped) and `inside` `[N]` (1 where the label is in the chunk); `grads`: `inv_t`, `lse` `[N]`,
 * `loss_w` `[N]`, `hot` `[N]` (the label's index in the chunk, or Vc when outside), with
 * `entropy` also `ent_w` and `entropy` `[N]`; `dlogits`: `d_logits` `[N, Vc]`; with `accumulate`
 * `acc_dh` `[N, d]`. `final-norm`: `x` `[N, d]`, `ln` `[d]` (backward: `d_h`) → `h` (backward:
 * `dx`, `g_ln`).
 * @internal
 */
export function headGraph(hidden: number, mode: HeadGraphMode): HeadGraph {
  const n = new GraphNodes({ heads: 1, kvHeads: 1, headDim: 2 });
  const { FLOAT } = OnnxDataType;
  const inputs: ReturnType<typeof valueInfo>[] = [];
  const outputs: [string, string][] = [];
  const input = (name: string, dims: (string | number)[]) => {
    inputs.push(valueInfo(name, FLOAT, dims));
    return name;
  };
  const column = (x: string) => n.op('Unsqueeze', [x, n.g.int64([1])]); // [N] → [N, 1]
  if (mode.kind === 'final-norm') {
    input('x', ['N', hidden]);
    input('ln', [hidden]);
    const norm = n.rmsNorm('x', 'ln', mode.eps, mode.offset);
    if (!mode.backward) outputs.push(['h', norm.h]);
    else {
      const grads = new Map<string, string>();
      const dx = n.rmsBackward(norm, 'ln', input('d_h', ['N', hidden]), grads, mode.offset);
      outputs.push(['dx', dx], ['g_ln', grads.get('ln')!]);
    }
  } else {
    input('h', ['N', hidden]);
    input('w', ['V', hidden]);
    const raw = n.linear('h', 'w'); // [N, Vc]
    if (mode.kind === 'logits') outputs.push(['logits', raw]);
    else if (mode.kind === 'stats') {
      const l = n.mul(raw, input('inv_t', []));
      const m = n.op('ReduceMax', [l], { axes: [1], keepdims: 1 });
      const e = n.op('Exp', [n.sub(l, m)]);
      const sum = (x: string) => n.op('ReduceSum', [x, n.g.int64([1])], { keepdims: 0 });
      const index = column(n.op('Cast', [input('pick', ['N'])], { to: OnnxDataType.INT64 }));
      const picked = n.reshape(n.op('GatherElements', [l, index], { axis: 1 }), [-1]);
      outputs.push(
        ['m', n.reshape(m, [-1])],
        ['s', sum(e)],
        ['t', sum(n.mul(e, l))],
        ['picked', n.mul(picked, input('inside', ['N']))],
      );
    } else {
      const invT = mode.kind === 'grads' ? input('inv_t', []) : '';
      let dl: string;
      if (mode.kind === 'grads') {
        const logp = n.sub(n.mul(raw, invT), column(input('lse', ['N'])));
        const p = n.op('Exp', [logp]);
        const hot = n.op('Cast', [input('hot', ['N'])], { to: OnnxDataType.INT64 });
        const depth = n.op('Slice', [n.op('Shape', ['w']), n.g.int64([0]), n.g.int64([1])]);
        const oneHot = n.op('OneHot', [hot, depth, n.g.float([0, 1], [2])], { axis: -1 });
        let dScaled = n.mul(n.sub(p, oneHot), column(input('loss_w', ['N'])));
        if (mode.entropy) {
          const e = column(input('ent_w', ['N']));
          const h = column(input('entropy', ['N']));
          dScaled = n.sub(dScaled, n.mul(n.mul(e, p), n.add(logp, h)));
        }
        dl = n.mul(dScaled, invT);
      } else dl = input('d_logits', ['N', 'V']);
      let dh = n.inputGrad(dl, 'w');
      if (mode.accumulate) dh = n.add(input('acc_dh', ['N', hidden]), dh);
      // a frozen head (LoRA) needs d h only
      if (mode.weightGrad) outputs.push(['g_w', n.weightGrad(dl, 'h')]);
      outputs.push(['dh', dh]);
    }
  }
  for (const [name, value] of outputs) n.g.add('Identity', [value], {}, [name]);
  const model = n.g.encode({
    irVersion: 8,
    opset: 17,
    producerName: `@rlvr/trainer head graph (${mode.kind})`,
    graph: {
      name: `head_${mode.kind}`,
      input: inputs,
      output: outputs.map(([name]) => valueInfo(name, FLOAT)),
    },
  });
  return { model, inputs: inputs.map((i) => i.name!), outputs: outputs.map(([o]) => o) };
}
