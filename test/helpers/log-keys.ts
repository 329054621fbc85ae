// The top-level keys of one JSON log line in the order written, repeats included (JSON.parse
// keeps only the last of a repeated key, so it cannot tell).

/** Top-level keys of a JSON object text, in order, with repeats; [] when the text is not an object. */
export function topLevelKeys(line: string): string[] {
  const keys: string[] = [];
  let depth = 0;
  let expectKey = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (c === '"') {
      let j = i + 1;
      while (j < line.length && line[j] !== '"') j += line[j] === '\\' ? 2 : 1;
      if (depth === 1 && expectKey) keys.push(JSON.parse(line.slice(i, j + 1)) as string);
      expectKey = false;
      i = j;
    } else if (c === '{' || c === '[') {
      depth++;
      expectKey = c === '{' && depth === 1;
    } else if (c === '}' || c === ']') {
      depth--;
    } else if (c === ',' && depth === 1) {
      expectKey = true;
    }
  }
  return keys;
}

/** The keys a JSON log line writes more than once. */
export function repeatedKeys(line: string): string[] {
  const seen = new Set<string>();
  const repeated = new Set<string>();
  for (const key of topLevelKeys(line)) (seen.has(key) ? repeated : seen).add(key);
  return [...repeated];
}
