// Every HTTP listener (admin, http sink, http_chain and otlp sources) is created here, so a
// client that trickles its request cannot hold a socket for long (issue 30): the headers must
// arrive within a few seconds, the whole request within a bound, a TLS handshake likewise.

import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { TlsOptions } from 'node:tls';

/** Time allowed for a request's headers, ms: a local client sends them in one packet. */
export const HEADERS_TIMEOUT_MS = 5000;

export interface HttpListenerLimits {
  /** time allowed for a request's headers, ms; default HEADERS_TIMEOUT_MS (cut to requestTimeoutMs when that is shorter) */
  readonly headersTimeoutMs?: number;
  /** time allowed for a whole request (headers and body, not the response), ms; 0 = none */
  readonly requestTimeoutMs: number;
  /** idle time before a kept-alive connection is closed, ms; default 5000 */
  readonly keepAliveTimeoutMs?: number;
  /** connections held at once; more are closed as they come; default none */
  readonly maxConnections?: number;
}

/**
 * An http or https server (https when `tls` is given) whose slow clients are cut: Node checks
 * the headers and request timeouts every `connectionsCheckingInterval` (30 s by default, which
 * let a trickling client hold a socket 60-90 s); here every second.
 */
export function createHttpListener(
  tls: TlsOptions | undefined,
  limits: HttpListenerLimits,
  onRequest: (req: IncomingMessage, res: ServerResponse) => void,
): Server {
  const request = limits.requestTimeoutMs;
  const headers = Math.min(limits.headersTimeoutMs ?? HEADERS_TIMEOUT_MS, request > 0 ? request : Infinity);
  const options = { headersTimeout: headers, requestTimeout: request, connectionsCheckingInterval: 1000 };
  const server: Server = tls ? createHttpsServer({ ...tls, ...options, handshakeTimeout: headers }, onRequest) : createHttpServer(options, onRequest);
  server.keepAliveTimeout = limits.keepAliveTimeoutMs ?? 5000;
  if (limits.maxConnections !== undefined) server.maxConnections = limits.maxConnections;
  return server;
}

/**
 * Stops an HTTP listener: no new connections, idle ones closed; `drain` (when given) waits for
 * the requests under way to be answered; then the connections left are closed within 500 ms.
 */
export async function closeHttpListener(server: Server, drain?: () => Promise<void>): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  if (drain) await drain();
  const timer = setTimeout(() => server.closeAllConnections(), 500);
  await closed;
  clearTimeout(timer);
}
