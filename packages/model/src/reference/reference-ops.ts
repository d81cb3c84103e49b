/**
 * Float64 building blocks of the reference forward pass (plain loops; tiny models only).
 * @internal
 */

/** out[i] = sum_j x[j] * w[i * inDim + j] (+ bias[i]): a PyTorch Linear with weight [out, in]. */
export function linear(
  x: Float64Array,
  w: Float32Array,
  bias: Float32Array | undefined,
  inDim: number,
  outDim: number,
): Float64Array {
  const out = new Float64Array(outDim);
  for (let i = 0; i < outDim; i++) {
    let sum = bias ? (bias[i] as number) : 0;
    const offset = i * inDim;
    for (let j = 0; j < inDim; j++) sum += (x[j] as number) * (w[offset + j] as number);
    out[i] = sum;
  }
  return out;
}

/**
 * RMSNorm `x / sqrt(mean(x²) + eps) · (offset + w)` over each of the `x.length / w.length` groups
 * of `w.length` values (one group for a hidden state, one per head for q/k norms). New array.
 */
export function rmsNorm(
  x: Float64Array,
  w: Float32Array,
  eps: number,
  offset: number,
): Float64Array {
  const width = w.length;
  const out = new Float64Array(x.length);
  for (let start = 0; start < x.length; start += width) {
    let sumSquares = 0;
    for (let i = 0; i < width; i++) sumSquares += (x[start + i] as number) ** 2;
    const scale = 1 / Math.sqrt(sumSquares / width + eps);
    for (let i = 0; i < width; i++) {
      out[start + i] = (x[start + i] as number) * scale * (offset + (w[i] as number));
    }
  }
  return out;
}

/** Rotates each head of `x` (`heads` × `headDim`, in place) by RoPE at `position` (rotate-half). */
export function applyRope(
  x: Float64Array,
  heads: number,
  headDim: number,
  position: number,
  inverseFrequencies: readonly number[],
): void {
  const half = headDim / 2;
  for (let i = 0; i < half; i++) {
    const angle = position * (inverseFrequencies[i] as number);
    const cos = Math.cos(angle);
    const sin = Math.sin(angle);
    for (let head = 0; head < heads; head++) {
      const base = head * headDim;
      const a = x[base + i] as number;
      const b = x[base + i + half] as number;
      x[base + i] = a * cos - b * sin;
      x[base + i + half] = b * cos + a * sin;
    }
  }
}

/** SiLU `x · σ(x)`. */
export function silu(x: number): number {
  return x / (1 + Math.exp(-x));
}

const SQRT_2_OVER_PI = Math.sqrt(2 / Math.PI);

/** PyTorch's `gelu(approximate='tanh')`: `x/2 · (1 + tanh(√(2/π) · (x + 0.044715 x³)))`. */
export function geluTanh(x: number): number {
  return 0.5 * x * (1 + Math.tanh(SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)));
}
