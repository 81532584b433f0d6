// The one place this project loads ioredis's values. Loading ioredis defines `class VerbatimString extends String`,
// which turns String.prototype into a prototype in V8's dictionary mode; nothing in ioredis ever builds a
// VerbatimString (only RESP3 replies do), so it stays slow, and every `charCodeAt`, `slice`, `indexOf` on a string in
// the process pays a dictionary lookup (Margot's reading and the log redactor are string loops throughout: ADR 0025).
export { Cluster, Redis } from "ioredis";

// A store on an object whose prototype chain holds String.prototype makes V8 turn that chain fast again.
const probe = Object.create(String.prototype) as { probe?: number };
probe.probe = 0;
