// Duplicate suppression (DESIGN.md §14): the first flow stage drops an entry whose id was seen
// within the window, the last `window_entries` ids and none older than `window_ms`. A ring of
// ids in arrival order (their bytes and times in typed arrays) and an open-addressing table for
// lookup: every step is O(1), and memory is about window_entries × 90 bytes, none of it strings.

import type { DedupConfig } from '../config/schema.js';
import { type DedupWindow, eachId } from '../core/dedup-window.js';

// the worker's pipeline takes the window it starts with from here, beside the set it fills
export type { DedupWindow };

/**
 * The id in a string of its own. An id read from a chain line is a slice of that line (or of the
 * whole chunk the line came in), and would keep all of it alive for as long as the window holds
 * the id: 100,000 ids kept 38 MB of 300-byte lines instead of 8 MB, each line promoted by the
 * garbage collector. Slicing a concatenation makes V8 copy it into a fresh string first.
 */
export function ownCopy(id: string): string {
  return ` ${id}`.slice(1);
}

/**
 * Bytes of an id kept in the window's byte store: the ids logrelay makes are at most 28 characters
 * of ASCII (core/ids.ts). A longer id, or one with a character past U+00FF, is kept as a string
 * (`long`). Kept as bytes, the window holds no strings: a busy collector's window is 100,000 ids
 * renewed every few seconds, each one a string the garbage collector promoted, copied and swept
 * (copying each with `ownCopy` before storing it was a sixth of the collector's dedup time); a
 * lookup compared a string from somewhere in the heap where it now reads 32 bytes in a row.
 */
const ID_BYTES = 32;
/** `lens` of an id held in `long` */
const LONG = 255;

/**
 * The window: a ring of ids in arrival order (their times in a Float64Array) and an open-addressing
 * table over it. A slot of the table is two Int32s side by side, the ring index + 1 (0: empty) and
 * the id's hash, so a lookup reads one cache line and touches a stored id only when the hashes
 * match. A Map here cost about 1 µs a lookup in a busy collector (each probe loads a key string
 * from somewhere in the heap); the window is looked up once or twice for every line received.
 * Linear probing with backward-shift deletion: no tombstones, and the ring remembers each id's slot
 * (`slotOf`), so eviction needs neither the id's hash nor a probe.
 */
export class DedupSet {
  /** ring index → its id's bytes, ID_BYTES each */
  private readonly bytes: Uint8Array;
  /** ring index → its id's length, or LONG */
  private readonly lens: Uint8Array;
  /** ring index → an id the byte store cannot hold */
  private readonly long = new Map<number, string>();
  private readonly times: Float64Array;
  /** ring index → table slot holding it */
  private readonly slotOf: Int32Array;
  /** [ring index + 1, hash] per slot */
  private readonly table: Int32Array;
  private readonly mask: number;
  /** sequence numbers of the oldest id still held and of the next one; ring index = seq % maxEntries */
  private head = 0;
  private next = 0;

  constructor(
    private readonly maxEntries: number,
    private readonly maxMs: number,
  ) {
    this.bytes = new Uint8Array(maxEntries * ID_BYTES);
    this.lens = new Uint8Array(maxEntries);
    this.times = new Float64Array(maxEntries);
    this.slotOf = new Int32Array(maxEntries);
    // at most a quarter full: probes stay short
    let slots = 16;
    while (slots < maxEntries * 4) slots *= 2;
    this.mask = slots - 1;
    this.table = new Int32Array(slots * 2);
  }

  get size(): number {
    return this.next - this.head;
  }

  /**
   * The id being looked up, read once: its hash, and its bytes while it fits the byte store
   * (`keyBytes`, compared and stored without reading the string again; a string's characters cost a
   * call each, and a lookup read them up to three times: hash, compare, store).
   */
  private readonly key = new Uint8Array(ID_BYTES);
  /** the looked-up id is in `key` (at most ID_BYTES characters, none past U+00FF) */
  private keyBytes = false;

  /** Reads `id` into `key` and returns its hash: FNV-1a over its UTF-16 units, then murmur3's final mix so every bit counts in the low ones. */
  private keyOf(id: string): number {
    const n = id.length;
    const key = this.key;
    let fits = n <= ID_BYTES;
    let h = 0x811c9dc5;
    for (let i = 0; i < n; i++) {
      const c = id.charCodeAt(i);
      h = Math.imul(h ^ c, 0x01000193);
      if (c > 0xff) fits = false;
      else if (i < ID_BYTES) key[i] = c;
    }
    this.keyBytes = fits;
    h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
    h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
    return h ^ (h >>> 16);
  }

  /** True when `id` is in the window (a duplicate); otherwise remembers it as seen at `now`. */
  check(id: string, now: number): boolean {
    this.expire(now);
    const h = this.keyOf(id);
    const slot = this.find(id, h);
    if (slot >= 0) return true;
    this.add(id, h, ~slot, now);
    return false;
  }

  /** True when `id` is in the window; remembers nothing (a line read ahead of its decode). */
  has(id: string, now: number): boolean {
    this.expire(now);
    return this.find(id, this.keyOf(id)) >= 0;
  }

  /** Adds ids seen elsewhere (a predecessor's window, a checkpoint), oldest first. */
  load(window: DedupWindow, now = Date.now()): void {
    eachId(window, (id, t) => {
      if (now - t > this.maxMs) return;
      const h = this.keyOf(id);
      const slot = this.find(id, h);
      if (slot < 0) this.add(id, h, ~slot, t);
    });
    this.expire(now);
  }

  /** The slot holding `id`, or ~slot of the empty one where it would go. */
  private find(id: string, h: number): number {
    const { table, mask } = this;
    for (let slot = h & mask; ; slot = (slot + 1) & mask) {
      const ring = table[slot * 2]!;
      if (ring === 0) return ~slot;
      if (table[slot * 2 + 1] === h && this.holds(ring - 1, id)) return slot;
    }
  }

  /** True when the ring index `ring` holds `id` (read into `key` by keyOf). */
  private holds(ring: number, id: string): boolean {
    const n = this.lens[ring]!;
    if (n === LONG) return this.long.get(ring) === id;
    // an id in the byte store fits it: one that does not (keyBytes false) is not there
    if (n !== id.length || !this.keyBytes) return false;
    const { bytes, key } = this;
    const at = ring * ID_BYTES;
    for (let i = 0; i < n; i++) if (bytes[at + i] !== key[i]) return false;
    return true;
  }

  /** Keeps `id` (read into `key` by keyOf) at the ring index `ring`: as bytes when it fits, else as a string of its own. */
  private store(ring: number, id: string): void {
    if (this.keyBytes) {
      const n = id.length;
      const { bytes, key } = this;
      const at = ring * ID_BYTES;
      for (let i = 0; i < n; i++) bytes[at + i] = key[i]!;
      this.lens[ring] = n;
      return;
    }
    this.lens[ring] = LONG;
    this.long.set(ring, ownCopy(id));
  }

  private add(received: string, h: number, slot: number, at: number): void {
    if (this.next - this.head === this.maxEntries) {
      this.evictOldest();
      // the eviction may have shifted entries into the free slot found: look again
      slot = ~this.find(received, h);
    }
    const ring = this.next++ % this.maxEntries;
    this.store(ring, received);
    this.times[ring] = at;
    this.slotOf[ring] = slot;
    this.table[slot * 2] = ring + 1;
    this.table[slot * 2 + 1] = h;
  }

  private evictOldest(): void {
    const ring = this.head++ % this.maxEntries;
    if (this.lens[ring] === LONG) this.long.delete(ring);
    const { table, mask, slotOf } = this;
    // backward-shift deletion: later entries of the probe run move up into the hole
    let hole = slotOf[ring]!;
    for (let slot = (hole + 1) & mask; ; slot = (slot + 1) & mask) {
      const moving = table[slot * 2]!;
      if (moving === 0) break;
      const home = table[slot * 2 + 1]! & mask;
      // an entry may move back to the hole only if its home is not after the hole (cyclically)
      const fits = hole <= slot ? home <= hole || home > slot : home <= hole && home > slot;
      if (!fits) continue;
      table[hole * 2] = moving;
      table[hole * 2 + 1] = table[slot * 2 + 1]!;
      slotOf[moving - 1] = hole;
      hole = slot;
    }
    table[hole * 2] = 0;
  }

  /** Forgets ids older than window_ms (the ring is in time order, oldest at head). */
  private expire(now: number): void {
    while (this.head < this.next && now - this.times[this.head % this.maxEntries]! > this.maxMs) this.evictOldest();
  }
}

export function createDedup(cfg: DedupConfig | undefined): DedupSet | undefined {
  return cfg?.enabled ? new DedupSet(cfg.window_entries, cfg.window_ms) : undefined;
}
