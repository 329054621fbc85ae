// Dead letters (DESIGN.md §24): the entries a sink gives up on, made into the items its dead
// letter sink takes — each entry whole, with `fields.dead_letter` saying which sink refused it,
// why and when, formatted (and framed ahead, for a chain sink) as the pipeline does its own.

import { encodeAhead, type FramedItem, framedItem } from '../core/entry-frame.js';
import type { Entry } from '../core/entry.js';
import { isoString } from '../core/iso-time.js';
import type { DeadLetterItem, Sink, SinkItem } from '../sinks/types.js';

/** What refused the entries: the sink's id, the reason, and the peer's status where it gave one. */
export interface Refusal {
  readonly from: string;
  readonly reason: string;
  readonly status?: number;
}

/**
 * The dead letter sink `target`'s items for `items`; each owes that sink a delivery, so its
 * ticket gains one (let go only once the dead letter is delivered or dropped with a count).
 */
export function deadLetterItems(items: readonly DeadLetterItem[], refusal: Refusal, target: Sink, format: (e: Entry) => string, pipeline: string): SinkItem[] {
  const { from, reason, status } = refusal;
  const now = Date.now();
  const at = isoString(now);
  const letters: SinkItem[] = [];
  for (const { entry: e, ticket } of items) {
    const dead_letter = status === undefined ? { sink: from, reason, at } : { sink: from, reason, status, at };
    const letter: Entry = { time: e.time, source: e.source, message: e.message, fields: { ...e.fields, dead_letter } };
    if (e.node !== undefined) letter.node = e.node;
    if (e.level !== undefined) letter.level = e.level;
    if (e.id !== undefined) letter.id = e.id;
    const line = format(letter);
    letters.push(target.sendsWire ? framedItem(letter, line, ticket) : { entry: letter, line, ticket, paths: 0 });
    if (ticket) ticket.pending++;
  }
  if (target.sendsWire) encodeAhead(letters as FramedItem[], 1 << (target.wireVersion?.() ?? 1), now, pipeline);
  return letters;
}
