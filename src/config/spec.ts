// The schema language of config files and plugin configs lives on the ground floor
// (core/spec.ts), where the field lists that several floors share (core/tls-config.ts) use it;
// the config floor and the plugins keep importing it from here.

export * from '../core/spec.js';
