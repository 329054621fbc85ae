#!/usr/bin/env node
// The executable: the process it starts is the cluster primary itself (no wrapper).
import '../dist/src/cli.js';
