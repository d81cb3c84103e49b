export type { Checkpoint, TokenizerFiles } from './checkpoint/checkpoint.js';
export { getTensor, validateCheckpoint } from './checkpoint/checkpoint.js';
export type { LoadCheckpointOptions, SaveCheckpointOptions } from './checkpoint/checkpoint-io.js';
export { CHECKPOINT_FILES, loadCheckpoint, saveCheckpoint } from './checkpoint/checkpoint-io.js';
export type { RandomCheckpointOptions } from './checkpoint/random-init.js';
export { createRandomCheckpoint } from './checkpoint/random-init.js';
export type { TensorSpec } from './checkpoint/tensor-names.js';
export { llamaTensorNames, llamaTensorSpecs } from './checkpoint/tensor-names.js';
export type {
  LayerArchitecture,
  LayerRope,
  ModelArchitecture,
} from './config/architecture.js';
export { modelArchitecture } from './config/architecture.js';
export type { LlamaConfig, LlamaConfigInput, LlamaModelType } from './config/llama-config.js';
export {
  countParameters,
  llamaBiases,
  parseLlamaConfig,
  SUPPORTED_MODEL_TYPES,
} from './config/llama-config.js';
export type {
  AttentionLayerType,
  ModelConfig,
  ModelConfigInput,
  ModelType,
} from './config/model-config.js';
export { MODEL_TYPES, parseModelConfig } from './config/model-config.js';
export type { RopeScaling } from './config/rope.js';
export { ROPE_SCALING_TYPES, ropeInverseFrequencies } from './config/rope.js';
export { ModelLoadError } from './errors/model-load-error.js';
export type { ExportGgufOptions, GgufDtype, WriteGgufOptions } from './gguf/export-gguf.js';
export { exportGguf, writeGgufModel } from './gguf/export-gguf.js';
export type { GgmlTypeName, GgufValueTypeId } from './gguf/gguf-format.js';
export { GgmlType, GgufTokenType, GgufValueType } from './gguf/gguf-format.js';
export type { GgufFile, GgufTensorInfo, GgufValue } from './gguf/gguf-reader.js';
export { parseGguf, readGguf } from './gguf/gguf-reader.js';
export type { LoraAdapter, LoraAdapterConfig } from './lora/lora-adapter.js';
export {
  LORA_ADAPTER_FILES,
  LORA_TARGET_MODULES,
  loadLoraAdapter,
  loraScale,
  mergeLora,
  saveLoraAdapter,
} from './lora/lora-adapter.js';
export type { ExportOnnxOptions } from './onnx/export-onnx.js';
export {
  exportOnnx,
  MASK_VALUE,
  ONNX_OPSET,
  onnxIoNames,
  writeOnnxModel,
} from './onnx/export-onnx.js';
// Advanced: the ONNX graph builder and Llama layer functions behind exportOnnx (for packages that
// build their own graphs, like @rlvr/rollout's in-graph sampling loop).
export type {
  OnnxAttributeValue,
  OnnxGraph,
  OnnxModelHeader,
  OnnxValueInfo,
} from './onnx/graph-builder.js';
export { GraphBuilder, OnnxDataType, valueInfo } from './onnx/graph-builder.js';
export type {
  AttentionBlock,
  DecoderLayerHooks,
  LlamaLayers,
  LlamaLayersOptions,
  ProjectionLayout,
} from './onnx/llama-layers.js';
export { createLlamaLayers } from './onnx/llama-layers.js';
export type {
  Float64Tensor,
  KeyValue,
  ReferenceForwardInput,
  ReferenceForwardResult,
} from './reference/reference-forward.js';
export { defaultPositionIds, referenceForward } from './reference/reference-forward.js';
export {
  bfloat16BitsToFloat32,
  float16BitsToFloat32,
  float32ToBfloat16Bits,
  float32ToFloat16Bits,
} from './safetensors/float16.js';
export type {
  ReadSafetensorsOptions,
  SafetensorsContents,
  SafetensorsDtype,
  SafetensorsEntry,
  SafetensorsHeader,
  SafetensorsWriteDtype,
  WriteSafetensorsOptions,
} from './safetensors/safetensors.js';
export {
  encodeSafetensors,
  parseSafetensors,
  readSafetensors,
  readSafetensorsHeader,
  writeSafetensors,
} from './safetensors/safetensors.js';
export type { BuildTokenizerOptions, SpecialTokens } from './tokenizer/build-tokenizer.js';
export { buildCharTokenizer, buildWordTokenizer } from './tokenizer/build-tokenizer.js';
export type { BuildFamilyTokenizerOptions, TokenizerFamily } from './tokenizer/family-tokenizer.js';
export { buildFamilyTokenizer, TOKENIZER_FAMILIES } from './tokenizer/family-tokenizer.js';
export type { ChatMessage, ChatTemplateOptions, Tokenizer } from './tokenizer/tokenizer.js';
export { createTokenizer, loadTokenizer } from './tokenizer/tokenizer.js';
export { VERSION } from './version.js';
