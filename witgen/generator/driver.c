/* The witness generator's main program. It is compiled, per circuit, with
 * wabt's wasm2c translation of circom's circuit.wasm (circuit.c, module name
 * "circuit") and the wasm2c runtime; witgen/generator_build.cpp does that and
 * caches the result. It runs as a child process of zkprove or zkworker
 * (witgen/child_process.cpp, witness_generator.cpp), one process per witness,
 * a fresh one each time: nothing of one job's run (one client's inputs) is
 * left in the memory the next job's runs in:
 *
 *   generator --describe
 *       prints one line: "zkfleet-generator 1 n32=8 witness=W inputs=I
 *       native=0|1 prime=<hex, most significant first>"
 *   generator [--cpu-seconds S] [--memory-bytes B] [--repeat N]
 *       reads one request on stdin (the inputs, already parsed and reduced
 *       mod p by the parent, witgen/input_json.cpp):
 *         "ZKWI" u32 version=1  u32 n32  u32 signals
 *         per signal: u32 name_len, name bytes, u32 count, count*n32 u32 words
 *                     (each value least significant word first)
 *       and writes the .wtns to stdout, byte for byte what snarkjs's
 *       circom_runtime (calculateWTNSBin) writes. --repeat N computes it N
 *       times and prints the per-witness times to stderr (benchmarks).
 *
 * It follows circom_runtime's witness_calculator.js step by step, with the
 * same messages: init(0); per input: FNV-1a 64 of the name, its size
 * (getInputSignalSize), its values written into the shared memory and set
 * (setInputSignal); all inputs set; then getWitness(i) for every signal.
 *
 * Exit status: 0 ok; 2 the input does not fit the circuit (names the signal);
 * 3 the circuit failed (its assert or constraint, circom's message, or a wasm
 * trap); 4 a malformed request or an I/O error (the parent's fault); 5 the
 * memory limit. The error is the last lines on stderr.
 * The limits are set on itself before the circuit's code runs: RLIMIT_CPU
 * (the kernel sends SIGXCPU, then SIGKILL), RLIMIT_DATA (the wasm memory is
 * made writable page by page, so its growth counts; memory.grow then fails).
 * It dies with its parent (PR_SET_PDEATHSIG). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "circuit.h"
#include "wasm-rt-impl.h"

enum { kExitOk = 0, kExitBadInput = 2, kExitCircuit = 3, kExitRequest = 4, kExitMemory = 5 };

/* native_fr.c (included into circuit.c when the patch applies) overrides
 * these: the field selector, and the one-pass readout of the witness (0:
 * not available, the signals are read through getWitness). */
__attribute__((weak)) int zkfleet_native_read_witness(Z_circuit_instance_t* instance, uint32_t first, uint32_t count,
                                                      uint8_t* out) {
  (void)instance;
  (void)first;
  (void)count;
  (void)out;
  return 0;
}

/* native_fr.c (included into circuit.c when the patch applies) overrides this. */
__attribute__((weak)) int zkfleet_native_fr_select(const uint32_t* prime_words, uint32_t n32) {
  (void)prime_words;
  (void)n32;
  return 0;
}

/* ------------------------------------------------------------- imports */

struct Z_runtime_instance_t {
  Z_circuit_instance_t* circuit;
  char errors[8192]; /* printErrorMessage lines, as circom_runtime's errStr */
  size_t errors_len;
  uint32_t exception_code; /* exceptionHandler's code, 0 = none */
  size_t logged;           /* bytes of log() output passed to stderr */
};

static struct Z_runtime_instance_t g_runtime;
static Z_circuit_instance_t g_circuit;
static uint64_t g_memory_limit;

/* circom_runtime's getMessage(): characters until 0, at most 4096 here. */
static size_t ReadMessage(char* out, size_t cap) {
  size_t n = 0;
  for (int i = 0; i < 4096; ++i) {
    uint32_t c = Z_circuitZ_getMessageChar(g_runtime.circuit);
    if (c == 0) break;
    if (n + 1 < cap) out[n++] = (char)c;
  }
  out[n] = 0;
  return n;
}

void Z_runtimeZ_exceptionHandler(struct Z_runtime_instance_t* rt, u32 code) {
  rt->exception_code = code == 0 ? 0xffffffffu : code;
  wasm_rt_trap(WASM_RT_TRAP_UNREACHABLE); /* unwinds to the wasm_rt_impl_try below, as JS's throw does */
}

void Z_runtimeZ_printErrorMessage(struct Z_runtime_instance_t* rt) {
  char line[4100];
  size_t n = ReadMessage(line, sizeof line);
  if (rt->errors_len + n + 2 < sizeof rt->errors) {
    memcpy(rt->errors + rt->errors_len, line, n);
    rt->errors_len += n;
    rt->errors[rt->errors_len++] = '\n';
    rt->errors[rt->errors_len] = 0;
  }
}

/* The circuit's log(): to stderr, at most 64 KiB per witness. */
void Z_runtimeZ_writeBufferMessage(struct Z_runtime_instance_t* rt) {
  char line[4100];
  size_t n = ReadMessage(line, sizeof line);
  if (rt->logged + n + 8 > 65536) return;
  rt->logged += n + 8;
  fprintf(stderr, "log: %s\n", line);
}

void Z_runtimeZ_showSharedRWMemory(struct Z_runtime_instance_t* rt) { (void)rt; }

/* ------------------------------------------------------------- helpers */

static void Fail(int status, const char* fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));
static void Fail(int status, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  fputs("error: ", stderr);
  vfprintf(stderr, fmt, args);
  fputc('\n', stderr);
  va_end(args);
  fflush(stderr);
  _exit(status);
}

/* circom_runtime's exceptionHandler texts. */
static const char* ExceptionText(uint32_t code) {
  switch (code) {
    case 1: return "Signal not found.";
    case 2: return "Too many signals set.";
    case 3: return "Signal already set.";
    case 4: return "Assert Failed.";
    case 5: return "Not enough memory.";
    case 6: return "Input signal array access exceeds the size.";
    default: return "Unknown error.";
  }
}

/* After a trap: the circuit's exception (with its error lines), the memory
 * limit (the wasm memory is near it: memory.grow failed), or a plain trap. */
static void FailTrapped(wasm_rt_trap_t trap, const char* during) __attribute__((noreturn));
static void FailTrapped(wasm_rt_trap_t trap, const char* during) {
  uint64_t memory = g_circuit.w2c_memory.size;
  if (g_runtime.exception_code == 5 ||
      (g_memory_limit && memory + (64u << 20) >= g_memory_limit && g_runtime.exception_code == 0)) {
    Fail(kExitMemory, "the generator reached its memory limit (%llu MiB of wasm memory, limit %llu MiB) %s",
         (unsigned long long)(memory >> 20), (unsigned long long)(g_memory_limit >> 20), during);
  }
  if (g_runtime.exception_code != 0) {
    /* strip the last newline of the error lines */
    size_t n = g_runtime.errors_len;
    while (n > 0 && g_runtime.errors[n - 1] == '\n') g_runtime.errors[--n] = 0;
    Fail(kExitCircuit, "%s%s%s", ExceptionText(g_runtime.exception_code), n ? "\n" : "", g_runtime.errors);
  }
  Fail(kExitCircuit, "the circuit's code trapped %s: %s", during, wasm_rt_strerror(trap));
}

static void ReadAll(int fd, uint8_t** data, size_t* size) {
  size_t cap = 1 << 16, n = 0;
  uint8_t* buf = malloc(cap);
  if (!buf) Fail(kExitRequest, "out of memory reading the request");
  for (;;) {
    if (n == cap) {
      if (cap >= ((size_t)1 << 32)) Fail(kExitRequest, "request larger than 4 GiB");
      cap *= 2;
      buf = realloc(buf, cap);
      if (!buf) Fail(kExitRequest, "out of memory reading the request");
    }
    ssize_t got = read(fd, buf + n, cap - n);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) Fail(kExitRequest, "cannot read the request: %s", strerror(errno));
    if (got == 0) break;
    n += (size_t)got;
  }
  *data = buf;
  *size = n;
}

typedef struct {
  const uint8_t* p;
  const uint8_t* end;
} Cursor;

static uint32_t TakeU32(Cursor* c) {
  if (c->end - c->p < 4) Fail(kExitRequest, "truncated request");
  uint32_t v;
  memcpy(&v, c->p, 4);
  c->p += 4;
  return v;
}

static const uint8_t* TakeBytes(Cursor* c, uint64_t n) {
  if ((uint64_t)(c->end - c->p) < n) Fail(kExitRequest, "truncated request");
  const uint8_t* at = c->p;
  c->p += n;
  return at;
}

static uint64_t Fnv1a64(const uint8_t* s, size_t n) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (size_t i = 0; i < n; ++i) {
    h ^= s[i];
    h *= 0x100000001B3ull;
  }
  return h;
}

static double Now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void WriteAll(int fd, const uint8_t* data, size_t n) {
  while (n > 0) {
    ssize_t put = write(fd, data, n);
    if (put < 0 && errno == EINTR) continue;
    if (put < 0) Fail(kExitRequest, "cannot write the witness: %s", strerror(errno));
    data += put;
    n -= (size_t)put;
  }
}

static void SetLimit(int resource, uint64_t soft, uint64_t hard) {
  struct rlimit limit = {(rlim_t)soft, (rlim_t)hard};
  if (setrlimit(resource, &limit) != 0) Fail(kExitRequest, "setrlimit: %s", strerror(errno));
}

/* Where the .wtns goes: streamed to stdout through a 1 MiB buffer (one
 * witness: the parent reads it while the rest is read out, and no
 * witness-sized buffer is faulted in here), or kept whole (--repeat: the
 * in-process benchmark reads every witness into memory, as circom_runtime
 * does, and writes the last one). */
typedef struct {
  uint8_t* buf;
  uint64_t cap, len;
  int stream;
} Out;

__attribute__((always_inline)) static inline void Put(Out* out, const void* bytes, uint64_t n) {
  if (out->stream && out->len + n > out->cap) {
    WriteAll(1, out->buf, out->len);
    out->len = 0;
  }
  memcpy(out->buf + out->len, bytes, n);
  out->len += n;
}

static int CompareDoubles(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

/* The native readout is used only if it gives getWitness's values for a
 * sample of signals (the first two, the middle, the last two): it relies
 * on the patch having read getWitness's code right. */
static int NativeReadoutAgrees(Z_circuit_instance_t* c, uint32_t witness_count, uint32_t shared) {
  if (witness_count == 0 || (uint64_t)shared + 32 > c->w2c_memory.size) return 0;
  uint32_t sample[5] = {0, 1, witness_count / 2, witness_count - 2, witness_count - 1};
  for (int k = 0; k < 5; ++k) {
    uint32_t i = sample[k] < witness_count ? sample[k] : witness_count - 1;
    uint8_t mine[32];
    if (!zkfleet_native_read_witness(c, i, 1, mine)) return 0;
    Z_circuitZ_getWitness(c, i);
    if (memcmp(mine, c->w2c_memory.data + shared, 32) != 0) return 0;
  }
  return 1;
}

/* ------------------------------------------------------------- main */

int main(int argc, char** argv) {
  int describe = 0;
  unsigned long long cpu_seconds = 0, memory_bytes = 0, repeat = 1;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--describe")) {
      describe = 1;
    } else if (i + 1 < argc && !strcmp(argv[i], "--cpu-seconds")) {
      cpu_seconds = strtoull(argv[++i], NULL, 10);
    } else if (i + 1 < argc && !strcmp(argv[i], "--memory-bytes")) {
      memory_bytes = strtoull(argv[++i], NULL, 10);
    } else if (i + 1 < argc && !strcmp(argv[i], "--repeat")) {
      repeat = strtoull(argv[++i], NULL, 10);
      if (repeat == 0) repeat = 1;
    } else {
      Fail(kExitRequest, "unknown argument %s", argv[i]);
    }
  }
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() == 1) _exit(kExitRequest); /* the parent is already gone */
  prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  {
    /* When the host runs short, the kernel kills this generator first, not
     * the worker that holds the pinned pool and the keys. */
    FILE* oom = fopen("/proc/self/oom_score_adj", "w");
    if (oom) {
      fputs("1000", oom);
      fclose(oom);
    }
  }
  SetLimit(RLIMIT_CORE, 0, 0);
  if (cpu_seconds) SetLimit(RLIMIT_CPU, cpu_seconds, cpu_seconds + 1);
  if (memory_bytes) {
    g_memory_limit = memory_bytes;
    SetLimit(RLIMIT_DATA, memory_bytes, memory_bytes);
  }

  wasm_rt_init();
  Z_circuit_init_module();
  g_runtime.circuit = &g_circuit;
  Z_circuit_instance_t* c = &g_circuit;
  wasm_rt_trap_t trap = (wasm_rt_trap_t)wasm_rt_impl_try();
  if (trap != WASM_RT_TRAP_NONE) FailTrapped(trap, "while loading");
  Z_circuit_instantiate(c, &g_runtime);
  /* circom sizes the initial memory to what the witness needs: faulting it
   * in at once (Linux >= 5.14; else ignored) is ~5% of a 2^20 witness
   * cheaper than page by page. */
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
  if (!describe && c->w2c_memory.size) madvise(c->w2c_memory.data, c->w2c_memory.size, MADV_POPULATE_WRITE);

  uint32_t n32 = Z_circuitZ_getFieldNumLen32(c);
  if (n32 == 0 || n32 > 64) Fail(kExitCircuit, "the circuit's field has %u 32-bit words (1..64 supported)", n32);
  uint32_t prime[64];
  Z_circuitZ_getRawPrime(c);
  for (uint32_t j = 0; j < n32; ++j) prime[j] = Z_circuitZ_readSharedRWMemory(c, j);
  uint32_t witness_count = Z_circuitZ_getWitnessSize(c);
  uint32_t input_count = Z_circuitZ_getInputSize(c);
  int native = zkfleet_native_fr_select(prime, n32);

  if (describe) {
    printf("zkfleet-generator 1 n32=%u witness=%u inputs=%u native=%d version=%u.%u.%u prime=", n32, witness_count,
           input_count, native, Z_circuitZ_getVersion(c), Z_circuitZ_getMinorVersion(c), Z_circuitZ_getPatchVersion(c));
    for (uint32_t j = n32; j-- > 0;) printf("%08x", prime[j]);
    printf("\n");
    return fflush(stdout) == 0 ? kExitOk : kExitRequest;
  }

  uint8_t* request;
  size_t request_size;
  ReadAll(0, &request, &request_size);
  Cursor cur = {request, request + request_size};
  if (memcmp(TakeBytes(&cur, 4), "ZKWI", 4) != 0) Fail(kExitRequest, "not a generator request");
  if (TakeU32(&cur) != 1) Fail(kExitRequest, "unknown request version");
  if (TakeU32(&cur) != n32) Fail(kExitRequest, "request for a field of another size");
  uint32_t signals = TakeU32(&cur);
  const uint8_t* first_signal = cur.p;

  const uint64_t n8 = 4ull * n32;
  const uint64_t header = 12 + 12 + 4 + n8 + 4 + 12;
  const uint64_t total = header + n8 * witness_count;
  Out out = {NULL, repeat > 1 ? total : (total < (1u << 20) ? total : (1u << 20)), 0, repeat == 1};
  out.buf = malloc(out.cap);
  if (!out.buf) Fail(kExitMemory, "cannot allocate the witness (%llu bytes)", (unsigned long long)out.cap);
  double* seconds = calloc(repeat, sizeof(double));
  int native_readout = 0; /* the last witness was read out by native_fr.c */

  for (unsigned long long round = 0; round < repeat; ++round) {
    double t0 = Now();
    trap = (wasm_rt_trap_t)wasm_rt_impl_try();
    if (trap != WASM_RT_TRAP_NONE) FailTrapped(trap, "while computing the witness");
    Z_circuitZ_init(c, 0);
    uint64_t set = 0;
    cur.p = first_signal;
    for (uint32_t s = 0; s < signals; ++s) {
      uint32_t name_len = TakeU32(&cur);
      const uint8_t* name = TakeBytes(&cur, name_len);
      uint32_t count = TakeU32(&cur);
      const uint8_t* values = TakeBytes(&cur, (uint64_t)count * n8);
      uint64_t h = Fnv1a64(name, name_len);
      uint32_t msb = (uint32_t)(h >> 32), lsb = (uint32_t)h;
      int32_t size = (int32_t)Z_circuitZ_getInputSignalSize(c, msb, lsb);
      if (size < 0) Fail(kExitBadInput, "Signal %.*s not found", (int)name_len, (const char*)name);
      if (count < (uint32_t)size) Fail(kExitBadInput, "Not enough values for input signal %.*s", (int)name_len, (const char*)name);
      if (count > (uint32_t)size) Fail(kExitBadInput, "Too many values for input signal %.*s", (int)name_len, (const char*)name);
      for (uint32_t i = 0; i < count; ++i) {
        for (uint32_t j = 0; j < n32; ++j) {
          uint32_t word;
          memcpy(&word, values + (uint64_t)i * n8 + 4ull * j, 4);
          Z_circuitZ_writeSharedRWMemory(c, j, word);
        }
        Z_circuitZ_setInputSignal(c, msb, lsb, i);
        ++set;
      }
    }
    if (set < input_count) {
      Fail(kExitBadInput, "Not all inputs have been set. Only %llu out of %u", (unsigned long long)set, input_count);
    }
    /* circom_runtime's calculateWTNSBin layout: wtns v2, two sections. */
    out.len = 0;
    uint32_t head[7] = {0, 2, 2, 1, (uint32_t)(8 + n8), 0, (uint32_t)n8};
    memcpy(head, "wtns", 4);
    Put(&out, head, sizeof head);
    Put(&out, prime, n8);
    uint64_t section2 = n8 * witness_count;
    uint32_t tail[4] = {witness_count, 2, (uint32_t)section2, (uint32_t)(section2 >> 32)};
    Put(&out, tail, sizeof tail);
    /* The value getWitness(i) leaves is readSharedRWMemory(0..n32-1), which
     * circom's wasm reads at getSharedRWMemoryStart() + 4j: copied straight
     * from there (8 calls fewer per signal) once the first signal showed the
     * two agree; otherwise, and past the memory's end, through the calls. */
    const uint32_t shared = Z_circuitZ_getSharedRWMemoryStart(c);
    uint32_t i = 0;
    native_readout = 0;
    if (n8 == 32 && NativeReadoutAgrees(c, witness_count, shared)) {
      /* native_fr.c's one-pass readout, straight into the output buffer */
      while (i < witness_count) {
        uint64_t room = (out.cap - out.len) / 32;
        if (room == 0) {
          WriteAll(1, out.buf, out.len);
          out.len = 0;
          continue;
        }
        uint32_t n = (uint32_t)(room < witness_count - i ? room : witness_count - i);
        if (!zkfleet_native_read_witness(c, i, n, out.buf + out.len)) break;
        out.len += 32ull * n;
        i += n;
      }
      /* the wasm's scratch area as getWitness would leave it */
      if (i == witness_count) {
        Z_circuitZ_getWitness(c, witness_count - 1);
        native_readout = 1;
      }
    }
    int direct = 0;
    for (; i < witness_count; ++i) {
      Z_circuitZ_getWitness(c, i);
      if (direct && (uint64_t)shared + n8 <= c->w2c_memory.size) {
        Put(&out, c->w2c_memory.data + shared, n8);
        continue;
      }
      uint32_t value[64];
      for (uint32_t j = 0; j < n32; ++j) value[j] = Z_circuitZ_readSharedRWMemory(c, j);
      Put(&out, value, n8);
      if ((uint64_t)shared + n8 <= c->w2c_memory.size) {
        direct = memcmp(value, c->w2c_memory.data + shared, n8) == 0;
      }
    }
    seconds[round] = Now() - t0;
  }
  if (repeat > 1) {
    qsort(seconds, repeat, sizeof(double), CompareDoubles);
    double sum = 0;
    for (unsigned long long i = 0; i < repeat; ++i) sum += seconds[i];
    fprintf(stderr,
            "{\"witnesses\":%llu,\"best_ms\":%.3f,\"median_ms\":%.3f,\"mean_ms\":%.3f,\"native\":%d,"
            "\"native_readout\":%d}\n",
            repeat, seconds[0] * 1e3, seconds[repeat / 2] * 1e3, sum / (double)repeat * 1e3, native, native_readout);
  }
  WriteAll(1, out.buf, out.len);
  return kExitOk;
}
