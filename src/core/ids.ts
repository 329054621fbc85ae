// Entry ids (DESIGN.md §14): a hashed prefix naming where entries come from, then a position.
// For file lines the prefix hashes node, pipeline, source, device, inode and truncation count and
// the position is the line's end offset, so a line read again gets the same id; for other entries
// the prefix adds a random value drawn once per process and the position is a sequence.

import { createHash, randomBytes } from 'node:crypto';

/** 16 characters of base64url (96 bits of SHA-1) and a `.`: at most 17 + 11 = 28 characters in all. */
export function idPrefix(...parts: readonly (string | number)[]): string {
  return `${createHash('sha1').update(parts.join('\0')).digest('base64url').slice(0, 16)}.`;
}

/** Drawn once per process: sequences of two processes never share a prefix. */
const PROCESS_NONCE = randomBytes(12).toString('hex');

/** Ids for entries that have no position of their own (random, stdin, or anything without an id). */
export class IdSequence {
  private readonly prefix: string;
  private seq = 0;

  constructor(node: string, pipeline: string, source: string) {
    this.prefix = idPrefix(node, pipeline, source, PROCESS_NONCE);
  }

  next(): string {
    return this.prefix + (this.seq++).toString(36);
  }
}
