// The exec channel's framing (ADR 0049), both ends' one codec: any sequence of frames, encoded, cut into reads
// anywhere, decodes to the same frames in order (fast-check shrinks a failure to its smallest case); data is kept
// byte for byte and cut into frames no longer than the limit; a length no frame of ours can have is refused.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { dataFrames, encodeFrame, FRAME, FrameDecoder, jsonFrame, MAX_PAYLOAD, type FrameType } from "../../../src/sandcastle/container-main/exec-frames.mjs";

const TYPES = Object.values(FRAME) as FrameType[];
const frameArb = fc.record({ type: fc.constantFrom(...TYPES), id: fc.nat({ max: 0xffffffff }), payload: fc.uint8Array({ maxLength: 300 }) });

/** `bytes` cut at the given offsets, each cut a read of its own. */
function cut(bytes: Buffer, offsets: number[]): Buffer[] {
  const at = [...new Set(offsets.map((o) => o % (bytes.length + 1)))].sort((a, b) => a - b);
  const reads: Buffer[] = [];
  let from = 0;
  for (const to of [...at, bytes.length]) {
    reads.push(bytes.subarray(from, to));
    from = to;
  }
  return reads;
}

describe("exec channel frames", () => {
  it("decode to what was encoded, in order, however the stream is cut into reads", () => {
    fc.assert(
      fc.property(fc.array(frameArb, { maxLength: 20 }), fc.array(fc.nat(), { maxLength: 30 }), (frames, offsets) => {
        const stream = Buffer.concat(frames.map((f) => encodeFrame(f.type, f.id, f.payload)));
        const decoder = new FrameDecoder();
        const decoded = cut(stream, offsets).flatMap((read) => decoder.push(Buffer.from(read)));
        expect(decoded.map((f) => ({ type: f.type, id: f.id, payload: new Uint8Array(f.payload) }))).toEqual(
          frames.map((f) => ({ ...f, payload: new Uint8Array(f.payload) })),
        );
      }),
      { numRuns: 500 },
    );
  });

  it("data past the limit is cut into frames of at most MAX_PAYLOAD that join to the same bytes", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 3 * MAX_PAYLOAD + 7 }), fc.nat({ max: 255 }), (size, seed) => {
        const data = Buffer.alloc(size, seed);
        if (size > 0) data[size - 1] = (seed + 1) % 256;
        const frames = dataFrames(FRAME.stdout, 7, data);
        expect(frames).toHaveLength(Math.ceil(size / MAX_PAYLOAD));
        const decoded = new FrameDecoder().push(Buffer.concat(frames));
        expect(decoded.every((f) => f.type === FRAME.stdout && f.id === 7 && f.payload.length <= MAX_PAYLOAD)).toBe(true);
        expect(Buffer.concat(decoded.map((f) => f.payload)).equals(data)).toBe(true);
      }),
      { numRuns: 20 },
    );
    expect(() => encodeFrame(FRAME.stdin, 1, Buffer.alloc(MAX_PAYLOAD + 1))).toThrow(RangeError);
  });

  it("JSON frames carry their object", () => {
    const [frame] = new FrameDecoder().push(jsonFrame(FRAME.exit, 3, { code: null, signal: "SIGKILL" }));
    expect(frame).toMatchObject({ type: FRAME.exit, id: 3 });
    expect(JSON.parse(frame!.payload.toString("utf8"))).toEqual({ code: null, signal: "SIGKILL" });
  });

  it("a length no frame of ours can have is refused, whatever came before it", () => {
    fc.assert(
      fc.property(
        fc.array(frameArb, { maxLength: 5 }),
        fc.oneof(fc.integer({ min: 0, max: 4 }), fc.integer({ min: MAX_PAYLOAD + 6, max: 0xffffffff })),
        (frames, length) => {
          const bad = Buffer.alloc(9);
          bad.writeUInt32BE(length, 0);
          const decoder = new FrameDecoder();
          expect(decoder.push(Buffer.concat(frames.map((f) => encodeFrame(f.type, f.id, f.payload))))).toHaveLength(frames.length);
          expect(() => decoder.push(bad)).toThrow(/not one of ours/);
        },
      ),
      { numRuns: 200 },
    );
  });
});
