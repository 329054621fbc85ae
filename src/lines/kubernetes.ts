// Kubernetes metadata from a container log's path (DESIGN.md §21): kubelet's
// `/var/log/pods/<namespace>_<pod>_<uid>/<container>/<n>.log` (the last three parts, under any
// prefix; rotated names `<n>.log.<time>` too) or a `/var/log/containers/<pod>_<namespace>_<container>-<id>.log`
// link. No API server is asked.

import { basename, dirname } from 'node:path';

export interface KubernetesMeta {
  readonly namespace: string;
  readonly pod: string;
  readonly pod_uid?: string;
  readonly container: string;
  readonly restart_count?: number;
}

const LOG_NAME = /^(\d+)\.log(?:\..+)?$/;
const CONTAINERS_NAME = /^([^_]+)_([^_]+)_(.+)-([0-9a-f]{64})\.log$/;

/** Metadata for a file under `/var/log/pods` (any prefix), or undefined when the path is not one. */
export function podLogMeta(path: string): KubernetesMeta | undefined {
  const name = LOG_NAME.exec(basename(path));
  if (name === null) return undefined;
  const containerDir = dirname(path);
  const container = basename(containerDir);
  const parts = basename(dirname(containerDir)).split('_');
  if (parts.length !== 3 || container === '' || parts.some((p) => p === '')) return undefined;
  return { namespace: parts[0]!, pod: parts[1]!, pod_uid: parts[2]!, container, restart_count: Number(name[1]) };
}

/** Metadata for a `/var/log/containers/<pod>_<namespace>_<container>-<id>.log` name, or undefined. */
export function containerLinkMeta(path: string): KubernetesMeta | undefined {
  const m = CONTAINERS_NAME.exec(basename(path));
  return m === null ? undefined : { namespace: m[2]!, pod: m[1]!, container: m[3]! };
}
