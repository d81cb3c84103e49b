// The single-file mathjs bundle (same API as `mathjs`, ~10× faster to load); typed where used.
declare module 'mathjs/lib/browser/math.js' {
  const math: unknown;
  export default math;
}
