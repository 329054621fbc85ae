// Chain protocol version 2, carrying a frame on: where the pipeline needs no entry (a relay), an
// entry frame read by frame-reader.ts goes on as it came, with what the receiving node stamps
// spliced in, instead of being decoded and framed again (passFrame).

import type { Entry } from './entry.js';
import { isTime, parseJsonText } from './entry.js';
import { hasKeys } from './entry-json.js';
import { ASCII, BODY_HEAD_BYTES, FRAME_ENTRY, type FramedItem, HAS_FIELDS, HAS_ID, HAS_NODE, KNOWN_FLAGS, lastBytes, LENGTH_BYTES, LEVELS, NEGATIVE_TIME, putLength, putTime, readTime, slabOffset, slabTaken, slabWith, type StringBytes } from './entry-frame.js';
import { type Frame, stringEnd, stringOf } from './frame-reader.js';
import type { Utf8Writer } from './lines-buffer.js';

/**
 * A received entry carried on as its frame (passFrame): a sink item without its entry or line, as
 * releaseEntries leaves one (a sink that must send version 1 decodes it: restoreEntries), with the
 * entry's id when the pipeline's dedup window needs it (or when passFrame stamped one).
 */
export interface PassedItem extends FramedItem {
  readonly id: string | undefined;
}

/** The bytes of what a node stamps on the frames it carries on: its link's node, its pipeline's name. */
const stampedNode = lastBytes();
const stampedSource = lastBytes();

/**
 * Where passFrame staged the frames of a read: `read` (Frame.read), its bytes `[start..end)` copied
 * into `slab` at `start + delta`, and where the slab's next frame goes while the stage holds (`at`).
 */
const stage: { read: number; slab: Buffer; start: number; end: number; delta: number; at: number } = { read: 0, slab: Buffer.alloc(0), start: 0, end: 0, delta: 0, at: -1 };
/** Most bytes of a read staged at once. */
const STAGE_BYTES = 64 * 1024;

/** Moves `buf[from..to)` to `at` within `buf`; returns the end. */
function moveBytes(buf: Buffer, from: number, to: number, at: number): number {
  buf.copyWithin(at, from, to);
  return at + to - from;
}

/** Copies the bytes of a stamped string to `at`; returns the end. */
function putBytes(s: StringBytes, to: Buffer, at: number): number {
  const { bytes } = s;
  for (let i = 0; i < bytes.length; i++) to[at + i] = bytes[i]!;
  return at + bytes.length;
}

/**
 * Carries an entry frame on without decoding it: where decodeEntryFrame would decode it (undefined
 * where that would be undefined, a parse error), writes the frame this node would write for the
 * entry decoded (encodeFrames after decodeEntryFrame): the bytes received, with what the receiving
 * node puts in spliced in — `node` when the frame has none, the next id of `nextId` (the pipeline
 * stamps ids) when it has none, `fallbackSource` for an empty source, `now` for a time out of
 * range — and an empty `fields` object left out. The message, the id, the level and the fields go
 * on as they came (fields are parsed only to be checked, as the decode does). The frame goes into
 * the pipeline's current slab, where encodeFrames writes, so a relay's consecutive entries lie next
 * to each other and leave in one write. `id`: what frameIdOf read, when it was read.
 *
 * The copying is most of the cost: a frame is pieces of the one received with a few bytes between
 * them, and Buffer#copy (or TypedArray#set) of a part of a Buffer makes a view of it first, an
 * allocation per piece. So the read's frames are staged: copied into the slab once, beyond where
 * they will be written, and each frame's pieces then moved within the slab (copyWithin: nothing
 * made). A frame written past its staged bytes (each grows by its stamps) stages the rest anew.
 */
export function passFrame(f: Frame, node: string | undefined, now: number, fallbackSource: string, nextId: (() => string) | undefined, id: string | undefined): PassedItem | undefined {
  const { buf, end } = f;
  const head = f.at;
  if (buf[head] !== FRAME_ENTRY || end - head < BODY_HEAD_BYTES) return undefined;
  const flags = buf[head + 1]!;
  const levelCode = buf[head + 2]!;
  if ((flags & ~KNOWN_FLAGS) !== 0 || levelCode >= LEVELS.length) return undefined;
  const ascii = (flags & ASCII) !== 0;
  // each string: its length, then its bytes; -1 once one runs past the frame (as in decodeEntryFrame)
  const idAt = head + BODY_HEAD_BYTES;
  const sourceAt = flags & HAS_ID ? stringEnd(buf, idAt, end) : idAt;
  const nodeAt = stringEnd(buf, sourceAt, end);
  const fieldsAt = flags & HAS_NODE ? stringEnd(buf, nodeAt, end) : nodeAt;
  let messageAt = fieldsAt;
  let keepFields = false;
  if (flags & HAS_FIELDS) {
    messageAt = stringEnd(buf, fieldsAt, end);
    if (messageAt < 0) return undefined;
    const fields = parseJsonText(stringOf(f, fieldsAt + LENGTH_BYTES, messageAt, ascii));
    if (typeof fields !== 'object' || fields === null || Array.isArray(fields)) return undefined;
    // the decoded entry's empty fields are written as none
    keepFields = hasKeys(fields);
  }
  if (messageAt < 0) return undefined;
  const magnitude = readTime(buf, head + 3);
  const t = flags & NEGATIVE_TIME ? -magnitude : magnitude;
  const timeOk = isTime(t);
  const ms = timeOk ? t : Math.trunc(now);
  const ownNode = (flags & HAS_NODE) !== 0 && fieldsAt - nodeAt > LENGTH_BYTES;
  const newNode = !ownNode && node ? stampedNode(node) : undefined;
  const newSource = nodeAt - sourceAt === LENGTH_BYTES ? stampedSource(fallbackSource) : undefined;
  const newId = (flags & HAS_ID) === 0 && nextId ? nextId() : undefined;
  const bound = LENGTH_BYTES + (end - head) + (newNode?.bytes.length ?? 0) + (newSource?.bytes.length ?? 0) + (newId === undefined ? 0 : LENGTH_BYTES + 3 * newId.length);

  const frameStart = head - LENGTH_BYTES;
  let out: Utf8Writer = slabWith(bound);
  let start = slabOffset();
  if (stage.read !== f.read || stage.slab !== out || stage.at !== start || end > stage.end || start + bound > frameStart + stage.delta) {
    // this frame and the read's next ones (up to STAGE_BYTES, or what the slab has room for, so no
    // slab is left part empty), copied beyond where they go, a quarter more room ahead for stamps
    let n = Math.max(end, Math.min(f.limit, frameStart + STAGE_BYTES)) - frameStart;
    const fits = Math.floor(((out.length - start - bound) * 4) / 5);
    if (fits >= end - frameStart) n = Math.min(n, fits);
    const lead = bound + (n >> 2);
    out = slabWith(lead + n);
    start = slabOffset();
    out.set(new Uint8Array(buf.buffer, buf.byteOffset + frameStart, n), start + lead);
    stage.read = f.read;
    stage.slab = out;
    stage.start = frameStart;
    stage.end = frameStart + n;
    stage.delta = start + lead - frameStart;
  }
  const d = stage.delta;
  const body = start + LENGTH_BYTES;
  let outAscii = ascii;
  // kind, flags, level, time, and the id and source as they came, unless stamped
  let at = moveBytes(out, head + d, (newId !== undefined ? idAt : newSource ? sourceAt : nodeAt) + d, body);
  if (newId !== undefined) {
    const n = out.utf8Write(newId, at + LENGTH_BYTES);
    putLength(out, at, n);
    if (n !== newId.length) outAscii = false;
    at += LENGTH_BYTES + n;
    if (!newSource) at = moveBytes(out, sourceAt + d, nodeAt + d, at);
  }
  if (newSource) {
    at = putBytes(newSource, out, at);
    if (!newSource.ascii) outAscii = false;
  }
  let outFlags = (ms < 0 ? NEGATIVE_TIME : 0) | (flags & HAS_ID || newId !== undefined ? HAS_ID : 0) | (ownNode || newNode ? HAS_NODE : 0) | (keepFields ? HAS_FIELDS : 0);
  if (ownNode && (keepFields || (flags & HAS_FIELDS) === 0)) {
    // node, fields, message: one piece
    at = moveBytes(out, nodeAt + d, end + d, at);
  } else {
    if (ownNode) at = moveBytes(out, nodeAt + d, fieldsAt + d, at);
    else if (newNode) {
      at = putBytes(newNode, out, at);
      if (!newNode.ascii) outAscii = false;
    }
    at = moveBytes(out, (keepFields ? fieldsAt : messageAt) + d, end + d, at);
  }
  if (outAscii) outFlags |= ASCII;
  out[body + 1] = outFlags;
  if (!timeOk) putTime(out, body + 3, ms);
  putLength(out, start, at - body);
  slabTaken(at);
  stage.at = at;
  // the weight of the item against buffer_max_bytes: the raw format's line, the message (FrameCarrier)
  return { entry: undefined as unknown as Entry, line: '', ticket: undefined, paths: 0, wireBuf: undefined, wireAt: 0, wireEnd: 0, wireCompleted: false, frameBuf: out, frameAt: start, frameEnd: at, frameCompleted: false, lineBytes: end - messageAt, id: newId ?? id };
}
