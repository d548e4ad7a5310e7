// Include FIRST in every CUDA translation unit of zkfleet/cuda (before any
// ff/ or curve/ header).
//
// ff/hd.hpp marks every field and curve function __forceinline__ under nvcc,
// in both of nvcc's passes. On the host pass that becomes g++'s
// always_inline, and forcing whole curve operations (scalar_mul over G2 with
// every Fp2 and Fp operation) inline makes g++ spend many minutes per file.
// Here the host pass gets plain `inline`; the device pass keeps
// __forceinline__, which is what the GPU kernels' speed depends on.
#pragma once

#include "zkfleet/ff/hd.hpp"

#if defined(__CUDACC__) && !defined(__CUDA_ARCH__)
#undef ZK_HD
#define ZK_HD __host__ __device__ inline
#endif
