// Whole-line writes to streams other processes share: the kernel writes at most PIPE_BUF bytes
// to a pipe or FIFO atomically, so no chunk of at most that size can tear another writer's line.

/** Bytes a pipe or FIFO takes in one atomic write (Linux). */
export const PIPE_BUF = 4096;

/** Groups lines (each plus `\n`) into chunks of at most `limit` bytes; a longer line goes alone. */
export function chunkLines(lines: readonly string[], limit: number): string[] {
  const chunks: string[] = [];
  let cur = '';
  let curBytes = 0;
  for (const line of lines) {
    const bytes = Buffer.byteLength(line) + 1;
    if (curBytes > 0 && curBytes + bytes > limit) {
      chunks.push(cur);
      cur = '';
      curBytes = 0;
    }
    cur += `${line}\n`;
    curBytes += bytes;
  }
  if (curBytes > 0) chunks.push(cur);
  return chunks;
}
