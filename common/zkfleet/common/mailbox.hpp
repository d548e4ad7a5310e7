// Mailbox<T>: a queue from any threads to one loop that polls a file
// descriptor. Post() appends and makes fd() readable; TakeAll() hands over
// everything posted so far, in order, and clears it. fd() is readable exactly
// while something waits, so a loop can poll it beside its sockets (a
// zmq::pollitem_t with socket = nullptr, fd = fd()) and never spins.
//
// The worker's pipeline events, the broker's verification verdicts, the gRPC
// front door's requests and the ingress guard's handshake failures each
// travel through one.
//
// Ownership: the mailbox owns its items and its eventfd.
// Thread-safety: Post() from any thread; TakeAll() and fd() from any thread
// (usually the one loop). Not copyable or movable.
#pragma once

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <deque>
#include <iterator>
#include <mutex>
#include <string>
#include <utility>

#include "zkfleet/common/error.hpp"

namespace zkfleet {

template <typename T>
class Mailbox {
 public:
  // `what` names the mailbox in the error when no eventfd can be made.
  explicit Mailbox(const char* what = "mailbox") : fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    if (fd_ < 0) throw Error(ErrorCode::kInternal, std::string(what) + ": eventfd: " + std::strerror(errno));
  }
  ~Mailbox() { close(fd_); }
  Mailbox(const Mailbox&) = delete;
  Mailbox& operator=(const Mailbox&) = delete;

  void Post(T item) {
    std::lock_guard lock(mutex_);
    const bool was_empty = items_.empty();
    items_.push_back(std::move(item));
    if (was_empty) {
      // Under the lock, so the fd is readable exactly while items wait.
      const uint64_t one = 1;
      while (write(fd_, &one, sizeof one) < 0 && errno == EINTR) {
      }
    }
  }

  // Items taken but not handled (the loop's turn stopped): back ahead of
  // everything posted since, in their order.
  template <typename Range>
  void PutBack(Range&& items) {
    std::lock_guard lock(mutex_);
    const bool was_empty = items_.empty();
    items_.insert(items_.begin(), std::make_move_iterator(std::begin(items)), std::make_move_iterator(std::end(items)));
    if (was_empty && !items_.empty()) {
      const uint64_t one = 1;
      while (write(fd_, &one, sizeof one) < 0 && errno == EINTR) {
      }
    }
  }

  // Everything posted so far, oldest first (empty when nothing waits).
  std::deque<T> TakeAll() {
    std::lock_guard lock(mutex_);
    std::deque<T> taken;
    if (items_.empty()) return taken;
    taken.swap(items_);
    uint64_t count = 0;
    while (read(fd_, &count, sizeof count) < 0 && errno == EINTR) {
    }
    return taken;
  }

  bool empty() const {
    std::lock_guard lock(mutex_);
    return items_.empty();
  }
  int fd() const { return fd_; }

 private:
  const int fd_;
  mutable std::mutex mutex_;
  std::deque<T> items_;
};

}  // namespace zkfleet
