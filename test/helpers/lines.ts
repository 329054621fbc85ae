// Test helpers: numbered lines to write into files and to look for in a node's output.

import { readFileSync } from 'node:fs';

/** A Java stack trace with a cause, as the `java` multiline preset groups it into one entry. */
export const JAVA_TRACE: readonly string[] = [
  'java.lang.IllegalStateException: order 42 not found',
  '\tat com.example.shop.OrderService.find(OrderService.java:88)',
  '\tat java.base/java.lang.Thread.run(Thread.java:1583)',
  'Caused by: java.sql.SQLException: connection reset',
  '\tat org.postgresql.core.v3.QueryExecutorImpl.execute(QueryExecutorImpl.java:356)',
  '\t... 1 more',
];

/** `<prefix> <i>` for from ≤ i ≤ to. */
export function lines(prefix: string, from: number, to: number): string[] {
  const out: string[] = [];
  for (let i = from; i <= to; i++) out.push(`${prefix} ${i}`);
  return out;
}

/** The lines joined, each ending in `\n`, as a file holds them. */
export const text = (ls: readonly string[]): string => ls.map((l) => `${l}\n`).join('');

/** How many of `haystack` equal `needle`. */
export function count(haystack: readonly string[], needle: string): number {
  let n = 0;
  for (const h of haystack) if (h === needle) n++;
  return n;
}

/** The content of `path`, or '' while it does not exist yet. */
export function readOrEmpty(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}
