/**
 * The few WebGPU interfaces this backend touches, declared locally so the package's types do not
 * depend on @webgpu/types (the DOM lib of TypeScript does not ship them yet).
 */

export interface GpuBufferLike {
  readonly size: number;
  readonly usage: number;
  mapAsync(mode: number, offset?: number, size?: number): Promise<void>;
  getMappedRange(offset?: number, size?: number): ArrayBuffer;
  unmap(): void;
  destroy(): void;
}

export interface GpuBindGroupLike {
  readonly label: string;
}

export interface GpuComputePipelineLike {
  getBindGroupLayout(index: number): unknown;
}

export interface GpuComputePassLike {
  setPipeline(pipeline: GpuComputePipelineLike): void;
  setBindGroup(index: number, group: GpuBindGroupLike): void;
  dispatchWorkgroups(x: number, y?: number, z?: number): void;
  end(): void;
}

export interface GpuCommandEncoderLike {
  beginComputePass(descriptor?: { label?: string }): GpuComputePassLike;
  copyBufferToBuffer(source: GpuBufferLike, sourceOffset: number, destination: GpuBufferLike, destinationOffset: number, size: number): void;
  finish(): unknown;
}

export interface GpuDeviceLike {
  readonly limits: { readonly maxStorageBufferBindingSize: number; readonly maxComputeWorkgroupsPerDimension: number };
  readonly queue: {
    writeBuffer(buffer: GpuBufferLike, offset: number, data: ArrayBufferView | ArrayBuffer): void;
    submit(commands: unknown[]): void;
  };
  createBuffer(descriptor: { size: number; usage: number; label?: string; mappedAtCreation?: boolean }): GpuBufferLike;
  createShaderModule(descriptor: { code: string; label?: string }): unknown;
  createComputePipeline(descriptor: {
    layout: 'auto';
    compute: { module: unknown; entryPoint: string };
    label?: string;
  }): GpuComputePipelineLike;
  createBindGroup(descriptor: {
    layout: unknown;
    entries: Array<{ binding: number; resource: { buffer: GpuBufferLike; offset?: number; size?: number } }>;
    label?: string;
  }): GpuBindGroupLike;
  createCommandEncoder(descriptor?: { label?: string }): GpuCommandEncoderLike;
  pushErrorScope(filter: 'validation' | 'out-of-memory' | 'internal'): void;
  popErrorScope(): Promise<{ message: string } | null>;
}

/** GPUBufferUsage and GPUMapMode flags (constants of the WebGPU spec). */
export const BufferUsage = {
  MAP_READ: 0x0001,
  COPY_SRC: 0x0004,
  COPY_DST: 0x0008,
  UNIFORM: 0x0040,
  STORAGE: 0x0080,
} as const;

export const MapMode = { READ: 0x0001 } as const;
