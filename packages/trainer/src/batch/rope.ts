/**
 * RoPE tables in Hugging Face's `rotate_half` convention: for head width `d` and position `p`,
 * `cos[p, i] = cos(p · θ^(−2(i mod d/2)/d))` (the two halves repeat), computed in float64.
 * @internal
 */
export function ropeTables(
  positions: Int32Array,
  headDim: number,
  theta: number,
): { cos: Float32Array; sin: Float32Array } {
  const half = headDim / 2;
  const inverse = new Float64Array(half);
  for (let index = 0; index < half; index++) inverse[index] = theta ** (-(2 * index) / headDim);
  return ropeTablesOf(positions, headDim, inverse);
}

/**
 * {@link ropeTables} from given inverse frequencies (`head_dim / 2` of them, float64: a family's
 * scaled RoPE, from @rlvr/model's `modelArchitecture`); `null`: no positional encoding (cos 1,
 * sin 0: the rotation is the identity, exactly). @internal
 */
export function ropeTablesOf(
  positions: Int32Array,
  headDim: number,
  inverse: ArrayLike<number> | null,
): { cos: Float32Array; sin: Float32Array } {
  const half = headDim / 2;
  if (inverse === null) {
    return {
      cos: new Float32Array(positions.length * headDim).fill(1),
      sin: new Float32Array(positions.length * headDim),
    };
  }
  const cos = new Float32Array(positions.length * headDim);
  const sin = new Float32Array(positions.length * headDim);
  for (let token = 0; token < positions.length; token++) {
    const position = positions[token]!;
    const base = token * headDim;
    for (let index = 0; index < half; index++) {
      const angle = position * inverse[index]!;
      const c = Math.cos(angle);
      const s = Math.sin(angle);
      cos[base + index] = c;
      cos[base + half + index] = c;
      sin[base + index] = s;
      sin[base + half + index] = s;
    }
  }
  return { cos, sin };
}

/**
 * The `[d, d]` matrix R with `x @ R = rotate_half(x) = concat(−x[d/2:], x[:d/2])`.
 * @internal
 */
export function rotateHalfMatrix(headDim: number): Float32Array {
  const half = headDim / 2;
  const matrix = new Float32Array(headDim * headDim);
  for (let column = 0; column < half; column++) matrix[(column + half) * headDim + column] = -1;
  for (let column = half; column < headDim; column++)
    matrix[(column - half) * headDim + column] = 1;
  return matrix;
}
