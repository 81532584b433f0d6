// The exec channel's frames (ADR 0049): one codec for both of its ends, the child on the host and the exec server
// in the run container. Plain Node, no import of the project: it is mounted into the container beside the server.
// A frame is [u32 BE: length of what follows][u8 type][u32 BE exec id][payload]; data frames carry raw bytes
// (binary-safe), the others a JSON object. Several execs share the channel, each under its own id.

export const FRAME = {
  /** host → server, once, when the host has taken the connection: from then on the server lives and dies with it. */
  hello: 0,
  /** host → server: start an exec. JSON {argv, cwd?, stdin}. */
  open: 1,
  /** host → server: bytes for the exec's stdin. */
  stdin: 2,
  /** host → server: the exec's stdin ends. */
  stdinEnd: 3,
  /** host → server: SIGKILL the exec's process group. */
  kill: 4,
  /** server → host: JSON {pid} once it runs, or {error} when it could not be started. */
  started: 5,
  stdout: 6,
  stderr: 7,
  /** server → host: JSON {code, signal}, the exec's last frame, after all of its output. */
  exit: 8,
  /** host → server: kill every process of the container but the server, answer `ended`, and end (the container goes). */
  end: 9,
  /** server → host: every other process of the container was SIGKILLed; the server exits next. */
  ended: 10,
  /** host → server: JSON {seconds}: the container now ends that long from now (a warm container adopted by its run). */
  deadline: 11,
} as const;

export type FrameType = (typeof FRAME)[keyof typeof FRAME];

export interface Frame {
  readonly type: number;
  readonly id: number;
  readonly payload: Buffer;
}

const HEADER_BYTES = 9;
/** Writers cut data into frames of at most this; a reader refuses a longer frame as a broken stream. */
export const MAX_PAYLOAD = 1024 * 1024;
const EMPTY = Buffer.alloc(0);

export function encodeFrame(type: FrameType, id: number, payload: Uint8Array = EMPTY): Buffer {
  if (payload.length > MAX_PAYLOAD) throw new RangeError(`a frame holds at most ${MAX_PAYLOAD} bytes, not ${payload.length}`);
  const frame = Buffer.allocUnsafe(HEADER_BYTES + payload.length);
  frame.writeUInt32BE(5 + payload.length, 0);
  frame.writeUInt8(type, 4);
  frame.writeUInt32BE(id, 5);
  frame.set(payload, HEADER_BYTES);
  return frame;
}

/** `data` as frames of `type`, each at most MAX_PAYLOAD. */
export function dataFrames(type: FrameType, id: number, data: Uint8Array): Buffer[] {
  const frames: Buffer[] = [];
  for (let at = 0; at < data.length; at += MAX_PAYLOAD) frames.push(encodeFrame(type, id, data.subarray(at, at + MAX_PAYLOAD)));
  return frames;
}

export function jsonFrame(type: FrameType, id: number, value: unknown): Buffer {
  return encodeFrame(type, id, Buffer.from(JSON.stringify(value), "utf8"));
}

/** Frames out of a byte stream cut anywhere. */
export class FrameDecoder {
  private chunks: Buffer[] = [];
  private size = 0;

  /** The frames `chunk` completes, in order; throws on a length no frame can have (the stream is not ours). */
  push(chunk: Buffer): Frame[] {
    if (chunk.length > 0) {
      this.chunks.push(chunk);
      this.size += chunk.length;
    }
    const frames: Frame[] = [];
    while (this.size >= 4) {
      let head = this.chunks[0]!;
      if (head.length < 4) head = this.flatten();
      const length = head.readUInt32BE(0);
      if (length < 5 || length > MAX_PAYLOAD + 5) throw new RangeError(`exec channel: a frame of ${length} bytes is not one of ours`);
      if (this.size < 4 + length) break;
      // Joined only once a frame is whole: a frame cut into many reads is copied once.
      if (head.length < 4 + length) head = this.flatten();
      frames.push({ type: head.readUInt8(4), id: head.readUInt32BE(5), payload: head.subarray(HEADER_BYTES, 4 + length) });
      const rest = head.subarray(4 + length);
      if (rest.length > 0) this.chunks[0] = rest;
      else this.chunks.shift();
      this.size -= 4 + length;
    }
    return frames;
  }

  private flatten(): Buffer {
    const all = Buffer.concat(this.chunks, this.size);
    this.chunks = [all];
    return all;
  }
}
