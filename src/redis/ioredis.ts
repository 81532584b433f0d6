// The one place this project loads ioredis's values. Loading ioredis defines `class VerbatimString extends String`,
// which turns String.prototype into a prototype in V8's dictionary mode; nothing in ioredis ever builds a
// VerbatimString (only RESP3 replies do), so it stays slow, and every `charCodeAt`, `slice`, `indexOf` on a string in
// the process pays a dictionary lookup: 2–3× on string loops, ~25 % of Margot's reading (ADR 0030).
export { Cluster, Redis } from "ioredis";

// A store on an object whose prototype chain holds String.prototype makes V8 turn that chain fast again.
const probe = Object.create(String.prototype) as { probe?: number };
probe.probe = 0;
