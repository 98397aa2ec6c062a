/**
 * Reads the float tensors stored in an ONNX model file (graph initializers and the `value` of
 * Constant nodes, in every subgraph), by name, straight from the protobuf bytes. Enough to take the
 * Silero VAD's weights out of the model the package ships (silero-network.ts), without a runtime
 * or a protobuf schema: ONNX's ModelProto is a handful of nested messages, and only the fields
 * below are read. Field numbers are those of onnx.proto (ModelProto.graph = 7, GraphProto.node =
 * 1 and .initializer = 5, NodeProto.output = 2, .op_type = 4, .attribute = 5, AttributeProto.name
 * = 1, .t = 5, .g = 6, .graphs = 11, TensorProto.dims = 1, .data_type = 2, .float_data = 4, .name
 * = 8, .raw_data = 9).
 */

export interface OnnxFloatTensor {
  dims: number[];
  data: Float32Array;
}

const WIRE_VARINT = 0;
const WIRE_FIXED64 = 1;
const WIRE_BYTES = 2;
const WIRE_FIXED32 = 5;
const ONNX_FLOAT = 1;

interface Field {
  field: number;
  wire: number;
  /** Varint value (wire 0). */
  value: number;
  /** Byte range of a length-delimited or fixed field. */
  start: number;
  end: number;
}

class ProtoReader {
  private readonly decoder = new TextDecoder();
  constructor(readonly bytes: Uint8Array) {}

  /** Varints past 2^53 (negative int64s) lose precision; none of the fields read here hold one. */
  private varint(at: { pos: number }): number {
    let result = 0;
    let scale = 1;
    for (;;) {
      if (at.pos >= this.bytes.length) throw new Error('ONNX model: truncated varint');
      const byte = this.bytes[at.pos++]!;
      result += (byte & 0x7f) * scale;
      if ((byte & 0x80) === 0) return result;
      scale *= 128;
    }
  }

  *fields(start: number, end: number): Generator<Field> {
    const at = { pos: start };
    while (at.pos < end) {
      const key = this.varint(at);
      const field = Math.floor(key / 8);
      const wire = key % 8;
      if (wire === WIRE_VARINT) {
        const value = this.varint(at);
        yield { field, wire, value, start: at.pos, end: at.pos };
      } else if (wire === WIRE_BYTES) {
        const length = this.varint(at);
        const fieldStart = at.pos;
        at.pos += length;
        if (at.pos > end) throw new Error('ONNX model: field runs past its message');
        yield { field, wire, value: length, start: fieldStart, end: at.pos };
      } else if (wire === WIRE_FIXED32 || wire === WIRE_FIXED64) {
        const size = wire === WIRE_FIXED32 ? 4 : 8;
        yield { field, wire, value: 0, start: at.pos, end: at.pos + size };
        at.pos += size;
      } else {
        throw new Error(`ONNX model: unsupported protobuf wire type ${wire}`);
      }
    }
  }

  text(field: Field): string {
    return this.decoder.decode(this.bytes.subarray(field.start, field.end));
  }

  /** Packed or repeated varints (TensorProto.dims). */
  varints(field: Field): number[] {
    if (field.wire === WIRE_VARINT) return [field.value];
    const values: number[] = [];
    const at = { pos: field.start };
    while (at.pos < field.end) values.push(this.varint(at));
    return values;
  }
}

function readTensor(reader: ProtoReader, start: number, end: number): { name: string; tensor?: OnnxFloatTensor } {
  let name = '';
  const dims: number[] = [];
  let dataType = 0;
  let raw: Field | undefined;
  const floats: number[] = [];
  for (const field of reader.fields(start, end)) {
    if (field.field === 1) dims.push(...reader.varints(field));
    else if (field.field === 2) dataType = field.value;
    else if (field.field === 8) name = reader.text(field);
    else if (field.field === 9) raw = field;
    else if (field.field === 4) {
      const view = new DataView(reader.bytes.buffer, reader.bytes.byteOffset);
      if (field.wire === WIRE_FIXED32) floats.push(view.getFloat32(field.start, true));
      else for (let at = field.start; at < field.end; at += 4) floats.push(view.getFloat32(at, true));
    }
  }
  if (dataType !== ONNX_FLOAT) return { name };
  const count = dims.reduce((product, dim) => product * dim, 1);
  let data: Float32Array;
  if (raw) {
    // Copied out (raw_data is little-endian, and may sit at any byte offset in the file).
    const view = new DataView(reader.bytes.buffer, reader.bytes.byteOffset + raw.start, raw.end - raw.start);
    data = new Float32Array(count);
    for (let i = 0; i < count; i++) data[i] = view.getFloat32(i * 4, true);
  } else {
    data = Float32Array.from(floats);
  }
  if (data.length !== count)
    throw new Error(`ONNX model: tensor ${name} holds ${data.length} values, dims say ${count}`);
  return { name, tensor: { dims, data } };
}

function readGraph(reader: ProtoReader, start: number, end: number, out: Map<string, OnnxFloatTensor>): void {
  for (const field of reader.fields(start, end)) {
    if (field.field === 5) {
      const { name, tensor } = readTensor(reader, field.start, field.end);
      if (tensor) out.set(name, tensor);
    } else if (field.field === 1) {
      readNode(reader, field.start, field.end, out);
    }
  }
}

function readNode(reader: ProtoReader, start: number, end: number, out: Map<string, OnnxFloatTensor>): void {
  let opType = '';
  let output = '';
  const attributes: Field[] = [];
  for (const field of reader.fields(start, end)) {
    if (field.field === 4) opType = reader.text(field);
    else if (field.field === 2 && !output) output = reader.text(field);
    else if (field.field === 5) attributes.push(field);
  }
  for (const attribute of attributes) {
    for (const field of reader.fields(attribute.start, attribute.end)) {
      if (field.field === 5 && opType === 'Constant') {
        const { tensor } = readTensor(reader, field.start, field.end);
        if (tensor) out.set(output, tensor);
      } else if (field.field === 6 || field.field === 11) {
        readGraph(reader, field.start, field.end, out);
      }
    }
  }
}

/** Every float initializer and Constant of the model, in every subgraph, by tensor or output name. */
export function readOnnxFloatTensors(model: Uint8Array): Map<string, OnnxFloatTensor> {
  const reader = new ProtoReader(model);
  const out = new Map<string, OnnxFloatTensor>();
  for (const field of reader.fields(0, model.length)) {
    if (field.field === 7 && field.wire === WIRE_BYTES) readGraph(reader, field.start, field.end, out);
  }
  return out;
}
