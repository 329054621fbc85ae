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

const PLAIN = ['a', 'Z', '0', ' ', '/', '{', '}', ':', ',', "'", 'é', '€', '😀', '\u2028', '<'];
/** characters a JSON or frame writer must escape or take care with */
const ODD = ['"', '\\', '\n', '\t', '\u0000', '\u001f'];

/**
 * Text of up to `max - 1` characters drawn by `rand`: letters, punctuation, non-ASCII (two- and
 * four-byte UTF-8, U+2028), and with `odd` about one in five a character that needs escaping.
 */
export function randomText(rand: () => number, odd: boolean, max = 12): string {
  const n = Math.floor(rand() * max);
  let s = '';
  for (let i = 0; i < n; i++) s += odd && rand() < 0.2 ? ODD[Math.floor(rand() * ODD.length)] : PLAIN[Math.floor(rand() * PLAIN.length)];
  return s;
}
