// Datagrams the kernel dropped for one UDP socket (its receive buffer was full while the worker
// was busy): Linux counts them per socket in the `drops` column of /proc/net/udp and udp6. Read
// once a second, never per datagram; elsewhere there is no such count and none is reported.

import type { Socket as UdpSocket } from 'node:dgram';
import { existsSync, readlinkSync } from 'node:fs';
import { readFile } from 'node:fs/promises';

/** How the socket's row is found: its inode (through its file descriptor), else its local address and port. */
export type DropsMatch = { readonly by: 'inode'; readonly inode: string } | { readonly by: 'address'; readonly local: string };

/** Columns of a /proc/net/udp row (after splitting on spaces): local_address, inode, drops. */
const LOCAL_COL = 1;
const INODE_COL = 9;
const DROPS_COL = 12;
/** sk_drops is a 32-bit counter: a value below the last one wrapped. */
const WRAP = 2 ** 32;

/** The socket's kernel file descriptor: Node keeps it on the handle (POSIX), not in a public API. */
function fdOf(sock: UdpSocket): number | undefined {
  const fd = (sock as unknown as { _handle?: { fd?: unknown } })._handle?.fd;
  return typeof fd === 'number' && fd >= 0 ? fd : undefined;
}

/** /proc/net/udp's form of a local address: the IPv4 or IPv6 address as hex words in host order (little-endian), then the port. */
export function procAddress(address: string, port: number, family: 'IPv4' | 'IPv6'): string {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  if (family === 'IPv4') {
    const b = address.split('.').map(Number);
    return `${[b[3], b[2], b[1], b[0]].map((x) => (x ?? 0).toString(16).toUpperCase().padStart(2, '0')).join('')}:${hexPort}`;
  }
  const bytes = ipv6Bytes(address);
  let hex = '';
  for (let w = 0; w < 16; w += 4) for (let k = 3; k >= 0; k--) hex += bytes[w + k]!.toString(16).toUpperCase().padStart(2, '0');
  return `${hex}:${hexPort}`;
}

function ipv6Bytes(address: string): number[] {
  const [head, tail] = address.includes('::') ? address.split('::') : [address, undefined];
  const words = (s: string | undefined) => (s ? s.split(':') : []);
  const h = words(head);
  const t = words(tail);
  const all = tail === undefined ? h : [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  const out: number[] = [];
  for (const w of all) {
    const v = parseInt(w, 16) || 0;
    out.push(v >> 8, v & 0xff);
  }
  return out;
}

/** How to find `sock`'s row (bound): by inode when its descriptor is reachable, else by local address. */
export function dropsMatch(sock: UdpSocket): DropsMatch {
  const fd = fdOf(sock);
  if (fd !== undefined) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/self/fd/${fd}`));
      if (m) return { by: 'inode', inode: m[1]! };
    } catch {
      /* no /proc/self/fd: match by address */
    }
  }
  const a = sock.address();
  return { by: 'address', local: procAddress(a.address, a.port, a.family === 'IPv6' ? 'IPv6' : 'IPv4') };
}

/** The `drops` of the row `match` finds in the text of /proc/net/udp or udp6; undefined when absent. */
export function dropsIn(table: string, match: DropsMatch): number | undefined {
  const needle = match.by === 'inode' ? ` ${match.inode} ` : ` ${match.local} `;
  let at = table.indexOf(needle);
  while (at >= 0) {
    const start = table.lastIndexOf('\n', at) + 1;
    const endAt = table.indexOf('\n', at);
    const cols = table.slice(start, endAt < 0 ? undefined : endAt).trim().split(/\s+/);
    const hit = match.by === 'inode' ? cols[INODE_COL] === match.inode : cols[LOCAL_COL] === match.local;
    if (hit) {
      const drops = Number(cols[DROPS_COL]);
      return Number.isInteger(drops) ? drops : undefined;
    }
    at = table.indexOf(needle, at + 1);
  }
  return undefined;
}

export interface KernelDrops {
  /** Reads the socket's count now; resolves to datagrams dropped since `open` (first read). Never rejects. */
  poll(): Promise<number | undefined>;
}

/** True where the kernel counts drops per UDP socket and shows them (Linux with /proc). */
export const kernelDropsCounted = (): boolean => process.platform === 'linux' && existsSync('/proc/net/udp');

/**
 * A reader of `sock`'s kernel drop count on Linux (undefined elsewhere, or without /proc): counts
 * from its first poll, so a worker reports the drops of its own run (a socket shared with an
 * older generation brings its earlier drops along).
 */
export function kernelDrops(sock: UdpSocket): KernelDrops | undefined {
  if (!kernelDropsCounted()) return undefined;
  const match = dropsMatch(sock);
  const table = sock.address().family === 'IPv6' ? '/proc/net/udp6' : '/proc/net/udp';
  let base: number | undefined;
  let last = 0;
  let total = 0;
  return {
    async poll() {
      const text = await readFile(table, 'latin1').catch(() => '');
      const raw = dropsIn(text, match);
      if (raw === undefined) return base === undefined ? undefined : total;
      if (base === undefined) {
        base = raw;
        last = raw;
        return 0;
      }
      total += (raw - last + WRAP) % WRAP;
      last = raw;
      return total;
    },
  };
}
