#!/usr/bin/env node
// The executable: the process it starts is the cluster primary itself (no wrapper).
// Its own V8 flags first (src/primary/own-flags.ts), then the rest of the code: set before the
// modules are resolved and loaded, the first work that V8 would optimize.
import { PRIMARY_V8_FLAGS, setOwnFlags } from '../dist/src/primary/own-flags.js';

setOwnFlags(PRIMARY_V8_FLAGS);
await import('../dist/src/cli.js');
