// `format = "json"`: a JSON object (its `msg`, `ts`, `level` become the entry's when merged).

import { parseJsonText } from '../../core/entry.js';
import type { Parsed } from './types.js';

export function parseJson(text: string): Parsed | undefined {
  if (text.charCodeAt(0) !== 123 /* { */) {
    const t = text.trimStart();
    if (t.charCodeAt(0) !== 123) return undefined;
    text = t;
  }
  const obj = parseJsonText(text);
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) return undefined;
  return { fields: obj as Record<string, unknown>, promote: true };
}
