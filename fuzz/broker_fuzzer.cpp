// Fuzzes the broker's logic (BrokerCore) on a real LMDB journal with the
// envelopes a hostile peer with a valid key could send: every field of every
// client request and worker message, in any order, from several connections,
// under several keys.
//
// Input: records of [kind u8][peer u8][length u16 LE][Envelope bytes]. kind
// bit 0: from a worker (else a client); bit 1: authenticated (CURVE key
// "k<peer % 3>", role admin for even peers, submit for odd); peer % 4 picks
// the connection. A SUBMIT gets witness frames of the sizes it declares (up
// to 4 KiB each; a larger declaration gets a frame that does not match).
//
// Properties: nothing throws out of the core and the journal always commits
// (a field over its bound is refused, never written: on 712f740 a long
// request id threw MDB_BAD_VALSIZE); a SUBMIT is answered with a reply or an
// error; every JOB sent is for a job the core holds.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>

#include "fuzz_common.hpp"
#include "zkfleet/broker/broker_core.hpp"
#include "zkfleet/common/logging.hpp"
#include "zkfleet/wire/protocol.hpp"

namespace {

using zkfleet::broker::BrokerCore;
using zkfleet::broker::BrokerOptions;
using zkfleet::broker::Journal;
using zkfleet::broker::Peer;
using zkfleet::broker::Role;
using zkfleet::fuzz::Check;
namespace proto = zkfleet::proto;

Journal* journal = nullptr;
BrokerOptions options;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  zkfleet::InitLogging("broker_fuzzer", "off");
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("zkfleet-broker-fuzz-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  options.journal.dir = dir;
  options.journal.sync = zkfleet::broker::SyncMode::kNone;
  options.journal.map_bytes = 1ull << 30;
  options.journal.blob_threshold = 512;  // both witness paths: store values and files
  options.heartbeat_interval = std::chrono::milliseconds(100);
  options.unverified_circuits.insert("*");
  options.max_partitions = 8;
  journal = Journal::Open(options.journal).release();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  BrokerCore core(options, *journal);
  auto now = zkfleet::broker::Clock::now();
  size_t records = 0;
  while (size >= 4) {
    const uint8_t kind = data[0], peer_index = data[1];
    size_t length = data[2] | (size_t{data[3]} << 8);
    data += 4;
    size -= 4;
    length = std::min(length, size);
    proto::Envelope message;
    const bool decoded =
        zkfleet::wire::DecodeEnvelope(data, length, 1 << 20, message) == zkfleet::wire::DecodeStatus::kOk;
    data += length;
    size -= length;
    if (!decoded) continue;
    Peer peer;
    if (kind & 2) {
      peer.authenticated = true;
      peer.key_name = "k" + std::to_string(peer_index % 3);
      peer.role = peer_index % 2 ? Role::kSubmit : Role::kAdmin;
    }
    const std::string identity = std::string(1, static_cast<char>('a' + peer_index % 4));
    if (kind & 1) {
      core.HandleWorker(identity, message, now, peer);
    } else {
      zkfleet::fleet::Frames frames;
      const bool submit = message.has_submit();
      if (submit) {
        for (uint64_t bytes : message.submit().witness_bytes()) {
          frames.push_back(zkfleet::fleet::FrameFromString(std::string(std::min<uint64_t>(bytes, 4096), 'w')));
          if (frames.size() > 16) break;
        }
      }
      core.HandleClient(identity, message, now, peer, std::move(frames));
      if (submit) {
        bool answered = false;
        for (const auto& out : core.outbox()) {
          answered |= out.identity == identity && (out.envelope.has_submit_reply() || out.envelope.has_error());
        }
        Check(answered, "a SUBMIT got no answer");
      }
    }
    core.Dispatch(now);
    for (const auto& out : core.outbox()) {
      if (out.envelope.has_job()) {
        Check(core.jobs().Find(out.envelope.job().item().job_seq()) != nullptr, "a JOB for a job the core does not hold");
      }
    }
    core.outbox().clear();
    core.verify_outbox().clear();
    if (++records % 4 == 0) {
      now += std::chrono::milliseconds(150);
      core.Tick(now);
      core.outbox().clear();
    }
    journal->Commit();  // throws (and the fuzzer reports it) if anything invalid was written
  }
  return 0;
}
