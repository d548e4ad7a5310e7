// Portability macros for code compiled both by the host compiler (g++) and by
// nvcc for the GPU. Every field and curve operation is marked ZK_HD so that the
// same source is the CPU prover's hot loop and the CUDA kernels' arithmetic.
#pragma once

// Inlining is forced only in nvcc's device pass. In its host pass plain
// `inline` lets g++ decide, exactly as in .cpp files: forcing it there made
// the host half of a test kernel file take over 9 minutes to compile.
#if defined(__CUDA_ARCH__)
#define ZK_HD __host__ __device__ __forceinline__
#elif defined(__CUDACC__)
#define ZK_HD __host__ __device__ inline
#else
#define ZK_HD inline
#endif

// ZK_HD_NOINLINE: a host/device function that stays a real call on the GPU,
// for big bodies that run rarely (a doubling inside an addition) or whose
// copies would not fit the instruction cache.
#if defined(__CUDACC__)
#define ZK_HD_NOINLINE __host__ __device__ __noinline__
#else
#define ZK_HD_NOINLINE inline
#endif

// ZK_UNROLL fully unrolls the loop that follows. All loops it is used on run
// over a compile-time limb count, so after unrolling every limb index is a
// constant: the compiler keeps limbs in registers and folds constant tables.
// Under nvcc both passes use the CUDA pragma (its front end rejects GCC's).
#if defined(__CUDACC__) || defined(__clang__)
#define ZK_UNROLL _Pragma("unroll")
#elif defined(__GNUC__)
#define ZK_UNROLL _Pragma("GCC unroll 16")
#else
#define ZK_UNROLL
#endif

// ZK_NO_UNROLL keeps a long loop with a big body (exponentiation, scalar
// multiplication) rolled on the GPU, where unrolling only bloats the kernel.
#if defined(__CUDACC__)
#define ZK_NO_UNROLL _Pragma("unroll 1")
#else
#define ZK_NO_UNROLL
#endif
