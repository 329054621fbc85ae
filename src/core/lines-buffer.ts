// Many lines as one Buffer, each followed by `\n`, written straight into the buffer. Joining them
// into one string first is the slow way: a string over about 128 KiB is allocated in V8's
// large-object space, and making one (a join, `toString` of a large body) costs about 50 times
// what the same bytes cost in small strings (measured: 180 MB as 150 KB strings 1,000 ms, as
// strings of a few hundred bytes 20–70 ms).

/** Bytes a character may take in UTF-8: up to 4 (a surrogate pair's two units). */
const MAX_CHAR_BYTES = 4;

/**
 * Node's UTF-8 writer without `write()`'s argument handling (3× faster per line, measured): not
 * in the typings, but every Buffer has had it since Node 0.x (ws and protobufjs rely on it too);
 * and its Latin-1 writer, a plain copy for text known to be ASCII.
 */
export type Utf8Writer = Buffer & { utf8Write(text: string, offset: number): number; latin1Write(text: string, offset: number): number };

/**
 * Most UTF-16 units of lines joined into one string for one write: a few hundred lines, under V8's
 * large-object size (128 KiB) even for text of two bytes a unit. A string per line written cost a
 * native call each, and first a copy of the line made flat (a formatter's line is pieces joined);
 * a join writes the pieces of many lines straight into one string (a collector's json lines: 0.19
 * µs a line against 0.30, measured).
 */
const JOIN_UNITS = 32 * 1024;

/** `lines[from..to)` as UTF-8, each followed by `\n`, in one Buffer. */
export function linesBuffer(lines: readonly string[], from = 0, to = lines.length): Buffer {
  let left = 0;
  for (let i = from; i < to; i++) left += lines[i]!.length + 1;
  // sized for ASCII; grown in the rare case the text needs more (multi-byte characters)
  let buf = Buffer.allocUnsafe(left) as Utf8Writer;
  let at = 0;
  // bounded: each turn takes at least one line
  for (let i = from; i < to; ) {
    let end = i + 1;
    let units = lines[i]!.length + 1;
    while (end < to && units + lines[end]!.length + 1 <= JOIN_UNITS) units += lines[end++]!.length + 1;
    const text = end - i === 1 ? lines[i]! : lines.slice(i, end).join('\n');
    left -= units;
    let written = buf.utf8Write(text, at);
    // a write that ends within a character (and the newline) of the buffer's end may have been cut short
    if (buf.length - at - written < MAX_CHAR_BYTES + 2) {
      const need = Buffer.byteLength(text) + 1;
      if (buf.length - at < need) {
        const bigger = Buffer.allocUnsafe(Math.max(buf.length * 2, at + need + left)) as Utf8Writer;
        buf.copy(bigger, 0, 0, at);
        buf = bigger;
        written = buf.utf8Write(text, at);
      }
    }
    at += written;
    buf[at++] = 10;
    i = end;
  }
  return at === buf.length ? buf : buf.subarray(0, at);
}
