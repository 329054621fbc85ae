// What a parser of the `parse` step returns: the parsed keys, and what it read as the entry's own.

import type { Level } from '../../core/entry.js';

export interface Parsed {
  /** the keys parsed, in order */
  readonly fields: Record<string, unknown>;
  /** set by formats that carry the entry's own parts (access logs, syslog); the others are promoted by key */
  time?: number;
  level?: Level;
  message?: string;
  /** true: `msg`, `time`, `level` keys among `fields` are promoted as DESIGN.md §4 says */
  readonly promote: boolean;
  /**
   * `fields` as fieldsJson (core/entry-json.ts) writes them, without the closing `}`, when the
   * parser made it along (see Entry.fieldsText); whoever changes `fields` deletes it.
   */
  text?: string;
  /** true when the text parsed is printable ASCII without `\` (see Entry.quotedAscii) */
  quotedAscii?: boolean;
}

/** Parses one text; undefined when it does not parse. */
export type Parser = (text: string, now: number) => Parsed | undefined;
