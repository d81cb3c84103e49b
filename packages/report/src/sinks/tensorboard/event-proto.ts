/**
 * Hand-written protobuf encoding of the few TensorFlow messages an event file of scalars needs
 * (field numbers from tensorflow/core/util/event.proto and tensorflow/core/framework/summary.proto):
 * `Event { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; }`,
 * `Summary { repeated Value value = 1; }`, `Summary.Value { string tag = 1; float simple_value = 2; }`.
 * @internal
 */

const WIRE_VARINT = 0;
const WIRE_FIXED64 = 1;
const WIRE_LENGTH = 2;
const WIRE_FIXED32 = 5;

class Writer {
  private readonly chunks: Uint8Array[] = [];
  private length = 0;

  private push(bytes: Uint8Array): void {
    this.chunks.push(bytes);
    this.length += bytes.length;
  }

  varint(value: bigint): void {
    const bytes: number[] = [];
    let rest = BigInt.asUintN(64, value);
    do {
      let byte = Number(rest & 0x7fn);
      rest >>= 7n;
      if (rest > 0n) byte |= 0x80;
      bytes.push(byte);
    } while (rest > 0n);
    this.push(Uint8Array.from(bytes));
  }

  key(field: number, wire: number): void {
    this.varint(BigInt((field << 3) | wire));
  }

  double(field: number, value: number): void {
    this.key(field, WIRE_FIXED64);
    const bytes = new Uint8Array(8);
    new DataView(bytes.buffer).setFloat64(0, value, true);
    this.push(bytes);
  }

  float(field: number, value: number): void {
    this.key(field, WIRE_FIXED32);
    const bytes = new Uint8Array(4);
    new DataView(bytes.buffer).setFloat32(0, value, true);
    this.push(bytes);
  }

  int64(field: number, value: number): void {
    this.key(field, WIRE_VARINT);
    this.varint(BigInt(value));
  }

  bytes(field: number, value: Uint8Array): void {
    this.key(field, WIRE_LENGTH);
    this.varint(BigInt(value.length));
    this.push(value);
  }

  string(field: number, value: string): void {
    this.bytes(field, new TextEncoder().encode(value));
  }

  finish(): Uint8Array {
    const out = new Uint8Array(this.length);
    let offset = 0;
    for (const chunk of this.chunks) {
      out.set(chunk, offset);
      offset += chunk.length;
    }
    return out;
  }
}

/** The first record of every event file: `Event { wall_time, file_version: "brain.Event:2" }`. */
export function encodeFileVersionEvent(wallTime: number): Uint8Array {
  const event = new Writer();
  event.double(1, wallTime);
  event.string(3, 'brain.Event:2');
  return event.finish();
}

/** `Event { wall_time, step, summary { value { tag, simple_value } … } }`. */
export function encodeScalarsEvent(
  wallTime: number,
  step: number,
  scalars: readonly { tag: string; value: number }[],
): Uint8Array {
  const summary = new Writer();
  for (const { tag, value } of scalars) {
    const entry = new Writer();
    entry.string(1, tag);
    entry.float(2, value);
    summary.bytes(1, entry.finish());
  }
  const event = new Writer();
  event.double(1, wallTime);
  event.int64(2, step);
  event.bytes(5, summary.finish());
  return event.finish();
}
