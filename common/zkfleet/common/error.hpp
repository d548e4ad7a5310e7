// Error type used across zkfleet. Every error carries enough context
// (file, field, expected vs. found) to be acted on from one log line.
#pragma once

#include <stdexcept>
#include <string>

namespace zkfleet {

// What kind of failure an Error reports. Callers branch on this, never on text.
enum class ErrorCode {
  kInvalidArgument,   // bad option or parameter
  kNotFound,          // missing file, unknown circuit, unknown job
  kBadFormat,         // malformed or truncated input file / frame
  kMismatch,          // inputs that do not belong together (witness vs. zkey)
  kUnsatisfied,       // a witness of the right shape that does not satisfy the circuit
  kUnsupported,       // valid input we do not handle (e.g. a PLONK zkey)
  kResourceExhausted, // out of memory (host or device), pool exhausted
  kDeviceError,       // CUDA failure
  kDeviceLost,        // sticky CUDA failure: the context is unusable, the process must restart
  kIo,                // read/write/mmap failure
  kNotLeader,         // another broker leads now: this one must not write (etcd journal fencing)
  kInternal,          // a bug
};

const char* ErrorCodeName(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message)
      : std::runtime_error(message), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace zkfleet
