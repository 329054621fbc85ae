// A time's RFC 3339 text as `Date.prototype.toISOString` writes it, made from the Date's UTC
// fields: V8's toISOString looks the local time zone's display name up in ICU on its way (about
// 640 KiB of ICU's zone data resident in each process that calls it: an idle primary did, for
// its node reports; docs/capacity.md, "An idle node"). The UTC fields never touch it.

const pad = (n: number, width = 2): string => String(n).padStart(width, '0');

/** The text `new Date(ms).toISOString()` gives, and its RangeError for an invalid time. */
export function isoString(ms: number): string {
  const d = new Date(ms);
  const y = d.getUTCFullYear();
  // an invalid time: toISOString throws as it always did
  if (Number.isNaN(y)) return d.toISOString();
  const year = y >= 0 && y <= 9999 ? pad(y, 4) : `${y < 0 ? '-' : '+'}${pad(Math.abs(y), 6)}`;
  return `${year}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}T${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}.${pad(d.getUTCMilliseconds(), 3)}Z`;
}
