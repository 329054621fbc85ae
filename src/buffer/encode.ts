// The JSON line of a buffer record: byte for byte what `encodeEntry` (chain/protocol.ts) writes,
// made faster for the way entries reach a buffer. The entries of one read mostly share their
// time, node, source and level, and a syslog sender's fields (hostname, facility): the text of
// those is made once and reused while they stay the same; an id the buffer stamped needs no
// escaping check. Synchronous, one instance per buffer.

import type { Entry } from '../core/entry.js';
import { fieldsJson, hasKeys, isoTime, jsonString, NEEDS_ESCAPE, rawLine } from '../core/entry-json.js';
import { isTime } from '../core/entry.js';

export class LineEncoder {
  private headTime = Number.NaN;
  private headNode: string | undefined;
  private headSource = '';
  private headLevel: string | undefined;
  /** `{"time":…,"node":…,"source":…,"level":…,"message":` for the four above */
  private head = '';
  /** the keys and (primitive) values of the last fields encoded, and their text */
  private readonly fieldKeys: string[] = [];
  private readonly fieldValues: unknown[] = [];
  private fieldsText = '';
  /** set by encode(): the entry had no valid time or no source, and was given `now` or the fallback */
  completed = false;

  /** True when `text` (an id prefix) is written as it is inside JSON quotes. */
  static isPlain(text: string): boolean {
    return !NEEDS_ESCAPE.test(text);
  }

  /**
   * The line of `e`, as `encodeEntry(e, now, fallbackSource, …)` gives it; `plainId`: the id is
   * known to need no escaping (one the buffer stamped from a plain prefix).
   */
  encode(e: Entry, now: number, fallbackSource: string, plainId: boolean): string {
    this.completed = false;
    if (e.raw !== undefined) return rawLine(e as Entry & { raw: string });
    let time = e.time;
    let source = e.source;
    if (!isTime(time)) {
      time = now;
      this.completed = true;
    }
    if (typeof source !== 'string' || source === '') {
      source = fallbackSource;
      this.completed = true;
    }
    if (time !== this.headTime || e.node !== this.headNode || source !== this.headSource || e.level !== this.headLevel) this.newHead(e, time, source);
    const message = typeof e.message === 'string' ? e.message : String(e.message ?? '');
    let s = this.head + jsonString(message);
    if (e.fields && hasKeys(e.fields)) s += `,"fields":${this.fields(e.fields)}`;
    if (typeof e.id === 'string') s += plainId ? `,"id":"${e.id}"` : `,"id":${jsonString(e.id)}`;
    return `${s}}`;
  }

  private newHead(e: Entry, time: number, source: string): void {
    let s = `{"time":"${isoTime(time)}"`;
    if (e.node) s += `,"node":${jsonString(e.node)}`;
    if (source) s += `,"source":${jsonString(source)}`;
    if (e.level) s += `,"level":"${e.level}"`;
    this.head = `${s},"message":`;
    this.headTime = time;
    this.headNode = e.node;
    this.headSource = source;
    this.headLevel = e.level;
  }

  /** `fieldsJson(fields)`, reused while the keys (in order) and their primitive values stay the same. */
  private fields(fields: Readonly<Record<string, unknown>>): string {
    const keys = this.fieldKeys;
    const values = this.fieldValues;
    let n = 0;
    let same = true;
    for (const key in fields) {
      if (!Object.hasOwn(fields, key)) continue;
      if (n >= keys.length || keys[n] !== key || values[n] !== fields[key]) {
        same = false;
        break;
      }
      n++;
    }
    if (same && n === keys.length) return this.fieldsText;
    this.fieldsText = fieldsJson(fields);
    keys.length = values.length = 0;
    for (const key in fields) {
      if (!Object.hasOwn(fields, key)) continue;
      const value = fields[key];
      // an object's text may change while it stays the same object: never reused
      if (typeof value === 'object' && value !== null) {
        keys.length = values.length = 0;
        break;
      }
      keys.push(key);
      values.push(value);
    }
    return this.fieldsText;
  }
}
