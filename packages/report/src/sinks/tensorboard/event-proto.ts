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

const encoder = new TextEncoder();
const scratch = new DataView(new ArrayBuffer(8));

/** Appends protobuf fields to a growing byte list (numbers 0–255). */
class Writer {
  private readonly bytes: number[] = [];

  /** Base-128 varint of a non-negative safe integer (no BigInt needed below 2^53). */
  varint(value: number): void {
    let rest = value;
    while (rest >= 0x80) {
      this.bytes.push((rest % 0x80) | 0x80);
      rest = Math.floor(rest / 0x80);
    }
    this.bytes.push(rest);
  }

  key(field: number, wire: number): void {
    this.varint((field << 3) | wire);
  }

  double(field: number, value: number): void {
    this.key(field, WIRE_FIXED64);
    scratch.setFloat64(0, value, true);
    for (let i = 0; i < 8; i++) this.bytes.push(scratch.getUint8(i));
  }

  float(field: number, value: number): void {
    this.key(field, WIRE_FIXED32);
    scratch.setFloat32(0, value, true);
    for (let i = 0; i < 4; i++) this.bytes.push(scratch.getUint8(i));
  }

  /** int64 of a non-negative safe integer (steps). */
  int64(field: number, value: number): void {
    this.key(field, WIRE_VARINT);
    this.varint(value);
  }

  bytesField(field: number, value: ArrayLike<number>): void {
    this.key(field, WIRE_LENGTH);
    this.varint(value.length);
    for (let i = 0; i < value.length; i++) this.bytes.push(value[i]!);
  }

  string(field: number, value: string): void {
    this.bytesField(field, encoder.encode(value));
  }

  /** A nested message, written after its length. */
  message(field: number, nested: Writer): void {
    this.bytesField(field, nested.bytes);
  }

  finish(): Uint8Array {
    return Uint8Array.from(this.bytes);
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
    summary.message(1, entry);
  }
  const event = new Writer();
  event.double(1, wallTime);
  event.int64(2, step);
  event.message(5, summary);
  return event.finish();
}
