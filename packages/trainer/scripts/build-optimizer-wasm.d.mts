/** Assembles optimizer.wat; resolves to its bytes as base64. */
export function assembleOptimizer(): Promise<string>;
