// The plugin code one pipeline needs, and no other: each source and sink type it names is loaded
// through its registry's loader before the pipeline is built, so a worker holds only its own
// plugins (the primary none), and the disk buffer's code only when a source of it has one. An
// unknown type, or one whose code fails to load, is a fault the build reports with the plugin's id.

import { wantsDiskBuffer } from '../buffer/config.js';
import type { withBuffer } from '../buffer/source.js';
import type { PipelineConfig } from '../config/schema.js';
import { errorMessage } from '../core/errors.js';
import { sinkLoader, SINKS } from '../sinks/index.js';
import type { SinkFactory } from '../sinks/types.js';
import { sourceLoader, SOURCES } from '../sources/index.js';
import type { SourceFactory } from '../sources/types.js';

/** The types a registry knows, for the message that refuses an unknown one. */
const validTypes = (registry: object): string => Object.keys(registry).sort().join(', ');

/** A plugin type's factory, or why there is none (what the build says after `type: `). */
export type Loaded<F> = { readonly factory: F } | { readonly fault: string };

/** The factories of the plugin types one pipeline names, by type, loaded before it is built. */
export interface Plugins {
  readonly sinks: ReadonlyMap<string, Loaded<SinkFactory>>;
  readonly sources: ReadonlyMap<string, Loaded<SourceFactory>>;
  /** the disk buffer's wrapper of a source (DESIGN.md §23), when a source of the pipeline has a buffer */
  readonly withBuffer?: typeof withBuffer;
}

/** Loads the factory of each of `types` through its registry's loader; an unknown type or one whose code fails to load is a fault. */
async function loadTypes<F>(kind: 'sink' | 'source', types: readonly string[], loaderOf: (type: string) => (() => Promise<F>) | undefined, registry: object): Promise<Map<string, Loaded<F>>> {
  const out = new Map<string, Loaded<F>>();
  for (const type of new Set(types)) {
    const load = loaderOf(type);
    if (!load) {
      out.set(type, { fault: `unknown ${kind} type ${JSON.stringify(type)} (valid types: ${validTypes(registry)})` });
      continue;
    }
    try {
      out.set(type, { factory: await load() });
    } catch (err) {
      out.set(type, { fault: `cannot load the ${type} ${kind}: ${errorMessage(err)}` });
    }
  }
  return out;
}

/** The factories of every source and sink type `cfg` names. */
export async function loadPlugins(cfg: PipelineConfig): Promise<Plugins> {
  return {
    sinks: await loadTypes('sink', cfg.plugin_sinks.map((p) => p.type), sinkLoader, SINKS),
    sources: await loadTypes('source', cfg.plugin_sources.map((p) => p.type), sourceLoader, SOURCES),
    ...(cfg.plugin_sources.some(wantsDiskBuffer) ? { withBuffer: (await import('../buffer/source.js')).withBuffer } : {}),
  };
}
