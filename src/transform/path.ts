// Paths into an entry (DESIGN.md §24): `time`, `node`, `source`, `level`, `message`,
// `fields.<name>…` and `fields["k8s.pod"]`; parsed once, read and written by plain functions.

import { type Entry, normaliseLevel } from '../core/entry.js';
import { jsonString, primitiveJson } from '../core/entry-json.js';
import { readTime } from './time.js';

export type PathRoot = 'time' | 'node' | 'source' | 'level' | 'message' | 'fields';

export const PATH_ROOTS: readonly PathRoot[] = ['time', 'node', 'source', 'level', 'message', 'fields'];

export interface Path {
  readonly root: PathRoot;
  /** the keys under `fields`, outermost first; empty for the other roots */
  readonly keys: readonly string[];
}

/** A path that cannot be read: the reason, and the 0-based offset in the text where it went wrong. */
export class PathSyntaxError extends Error {
  constructor(
    reason: string,
    readonly at: number,
  ) {
    super(reason);
  }
}

const IDENT = /[A-Za-z_][A-Za-z0-9_]*/y;
const PLAIN_KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Reads a path from `text` at `from`; returns it and where it ended. Throws PathSyntaxError.
 * Used by the condition parser (a path inside an expression) and by parsePath (a path alone).
 */
export function readPath(text: string, from: number): { path: Path; end: number } {
  IDENT.lastIndex = from;
  const head = IDENT.exec(text);
  if (!head) throw new PathSyntaxError('expected a path', from);
  const root = head[0] as PathRoot;
  if (!PATH_ROOTS.includes(root)) throw new PathSyntaxError(`unknown path ${JSON.stringify(head[0])} (paths start with ${PATH_ROOTS.join(', ')})`, from);
  let i = from + head[0].length;
  const keys: string[] = [];
  for (;;) {
    const c = text[i];
    if (c === '.') {
      IDENT.lastIndex = i + 1;
      const key = IDENT.exec(text);
      if (!key) throw new PathSyntaxError('expected a field name after "."', i + 1);
      keys.push(key[0]);
      i += 1 + key[0].length;
    } else if (c === '[') {
      const q = text[i + 1];
      if (q !== '"' && q !== "'") throw new PathSyntaxError('expected a quoted field name after "["', i + 1);
      const { value, end } = readQuoted(text, i + 1);
      if (text[end] !== ']') throw new PathSyntaxError('expected "]"', end);
      keys.push(value);
      i = end + 1;
    } else break;
  }
  if (keys.length > 0 && root !== 'fields') throw new PathSyntaxError(`${root} has no fields under it`, from + root.length);
  return { path: { root, keys }, end: i };
}

/** A quoted string starting at `from` (its quote); escapes as JSON's, and `\'`. */
export function readQuoted(text: string, from: number): { value: string; end: number } {
  const quote = text[from];
  let out = '';
  let i = from + 1;
  for (; i < text.length; i++) {
    const c = text[i]!;
    if (c === quote) return { value: out, end: i + 1 };
    if (c === '\\') {
      const n = text[++i];
      if (n === 'n') out += '\n';
      else if (n === 't') out += '\t';
      else if (n === 'r') out += '\r';
      else if (n === 'b') out += '\b';
      else if (n === 'f') out += '\f';
      else if (n === '\\' || n === '"' || n === "'" || n === '/') out += n;
      else if (n === 'u' && /^[0-9a-fA-F]{4}$/.test(text.slice(i + 1, i + 5))) {
        out += String.fromCharCode(parseInt(text.slice(i + 1, i + 5), 16));
        i += 4;
      }
      else throw new PathSyntaxError(`unknown escape "\\${n ?? ''}"`, i - 1);
    } else out += c;
  }
  throw new PathSyntaxError('unterminated string', from);
}

/** A path written alone (a key of `set`, `rename`, `delete`, …). Throws PathSyntaxError. */
export function parsePath(text: string): Path {
  const { path, end } = readPath(text, 0);
  if (end !== text.length) throw new PathSyntaxError('unexpected text after the path', end);
  return path;
}

/** The path as it is written: `fields.a["k8s.pod"]`. */
export function printPath(path: Path): string {
  let s: string = path.root;
  for (const k of path.keys) s += PLAIN_KEY.test(k) ? `.${k}` : `[${JSON.stringify(k)}]`;
  return s;
}

export type Getter = (e: Entry) => unknown;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A reader of `path`; undefined when absent. Specialised by depth: no loop, no allocation. */
export function compileGet(path: Path): Getter {
  switch (path.root) {
    case 'time':
      return (e) => e.time;
    case 'node':
      return (e) => e.node;
    case 'source':
      return (e) => e.source;
    case 'level':
      return (e) => e.level;
    case 'message':
      return (e) => e.message;
    case 'fields':
      break;
  }
  const keys = path.keys;
  if (keys.length === 0) return (e) => e.fields;
  const [a, b, c] = keys as [string, string?, string?];
  const own = (o: unknown, k: string): unknown => (isObject(o) && Object.hasOwn(o, k) ? o[k] : undefined);
  if (keys.length === 1) return (e) => (e.fields !== undefined && Object.hasOwn(e.fields, a) ? e.fields[a] : undefined);
  if (keys.length === 2) return (e) => own(own(e.fields, a), b!);
  if (keys.length === 3) return (e) => own(own(own(e.fields, a), b!), c!);
  return (e) => {
    let o: unknown = e.fields;
    for (let i = 0; i < keys.length && o !== undefined; i++) o = own(o, keys[i]!);
    return o;
  };
}

/** What a write did: `bad` when the value could not be taken (`time` or `level` of no such form). */
export type WriteResult = 'ok' | 'bad';

export type Setter = (e: Entry, value: unknown) => WriteResult;

/**
 * The entry changed in place: the encodings it carried (its chain line, its fields' text) no
 * longer describe it.
 */
export function touched(e: Entry): void {
  if (e.raw !== undefined) e.raw = e.rawNodeAt = e.rawIdAt = undefined;
  if (e.fieldsText !== undefined) e.fieldsText = undefined;
}

/** A part of the entry but `fields` changed in place: its chain line no longer describes it, its fields' text still does. */
function touchedOutsideFields(e: Entry): void {
  if (e.raw !== undefined) e.raw = e.rawNodeAt = e.rawIdAt = undefined;
}

/**
 * Keys a write may add at the end of the fields' text (Entry.fieldsText): not `__proto__` (a write
 * sets the prototype) nor digits alone (an array index goes before the other keys).
 */
const appendable = (key: string): boolean => key !== '__proto__' && !/^\d+$/.test(key);

/**
 * The entry's fields object, its own to change: objects along a path are copied before a write,
 * since entries of one file may share one (the Kubernetes metadata of a container's lines).
 */
function ownFields(e: Entry): Record<string, unknown> {
  if (e.fields === undefined) return (e.fields = {});
  if (e.plainFields) {
    e.plainFields = undefined;
    e.fields = { ...e.fields };
  }
  return e.fields;
}

/** The object at keys[0..depth) under `fields`, copied (or created) so that it can be written. */
function parentFor(e: Entry, keys: readonly string[]): Record<string, unknown> {
  let o = ownFields(e);
  for (let i = 0; i < keys.length - 1; i++) {
    const k = keys[i]!;
    const next = Object.hasOwn(o, k) ? o[k] : undefined;
    const copy: Record<string, unknown> = isObject(next) ? { ...next } : {};
    o[k] = copy;
    o = copy;
  }
  return o;
}

/**
 * A writer of `path`. `time` takes RFC 3339, epoch seconds or ms (a number), or the common log
 * format's time; `level` normalises as §4; `node`, `source`, `message` take the value's text; a
 * missing `fields` parent is created. Writing undefined deletes (top-level: `node`, `level`).
 */
export function compileSet(path: Path): Setter {
  switch (path.root) {
    case 'time':
      return (e, v) => {
        const t = readTime(v);
        if (t === undefined) return 'bad';
        touchedOutsideFields(e);
        e.time = t;
        return 'ok';
      };
    case 'level':
      return (e, v) => {
        const level = normaliseLevel(v);
        if (level === undefined) return 'bad';
        touchedOutsideFields(e);
        e.level = level;
        return 'ok';
      };
    case 'node':
      return (e, v) => {
        touchedOutsideFields(e);
        e.node = v === undefined ? undefined : textOf(v);
        return 'ok';
      };
    case 'source':
      return (e, v) => {
        touchedOutsideFields(e);
        e.source = textOf(v);
        return 'ok';
      };
    case 'message':
      return (e, v) => {
        touchedOutsideFields(e);
        e.message = textOf(v);
        return 'ok';
      };
    case 'fields':
      break;
  }
  const keys = path.keys;
  if (keys.length === 0) {
    return (e, v) => {
      if (!isObject(v)) return 'bad';
      touched(e);
      e.plainFields = undefined;
      e.fields = { ...v };
      return 'ok';
    };
  }
  const last = keys[keys.length - 1]!;
  if (keys.length === 1 && appendable(last)) {
    const keyText = `,${jsonString(last)}:`;
    // the last value written and its JSON: a path's values mostly repeat (a route, a service name)
    let lastValue: unknown;
    /** the key's text and the last value's JSON, together: one string added to the fields' text */
    let lastJson: string | undefined;
    // a new key of a primitive value extends the fields' text (its place is last, as in the object's order)
    return (e, v) => {
      const text = e.fieldsText;
      touched(e);
      const fields = ownFields(e);
      if (v === undefined) delete fields[last];
      else {
        if (text !== undefined && !Object.hasOwn(fields, last)) {
          let json: string | undefined;
          if (v === lastValue) json = lastJson;
          else {
            const value = primitiveJson(v);
            json = value === undefined ? undefined : keyText + value;
            lastValue = v;
            lastJson = json;
          }
          if (json !== undefined) e.fieldsText = text + json;
        }
        fields[last] = v;
      }
      return 'ok';
    };
  }
  return (e, v) => {
    touched(e);
    const parent = parentFor(e, keys);
    if (v === undefined) delete parent[last];
    else parent[last] = v;
    return 'ok';
  };
}

/** A remover of a path under `fields`; true when something was removed. */
export function compileDelete(path: Path): (e: Entry) => boolean {
  const get = compileGet(path);
  const set = compileSet(path);
  return (e) => {
    if (get(e) === undefined) return false;
    set(e, undefined);
    return true;
  };
}

/** A value as text: strings as they are, objects as JSON, absent and null as "". */
export function textOf(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v === undefined || v === null) return '';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v as number | boolean | bigint);
}
