// A small deterministic generator for fuzz tests (xorshift32), so a failure can be replayed.

/** Numbers in [0, 1) from `seed`, the same sequence every run. */
export function xorshift(seed: number): () => number {
  let s = seed;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 0x100000000;
  };
}
