// A SUBMIT's shape checks (field_checks.hpp: SubmitShapeProblem,
// NewJobShapeProblem), applied before the broker looks anything up or
// accepts anything; BrokerCoreTest covers the same refusals end to end.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "zkfleet/broker/field_checks.hpp"

namespace zkfleet::broker {
namespace {

proto::SubmitRequest Inline(uint64_t bytes, int partitions = 1) {
  proto::SubmitRequest request;
  request.set_request_id("r1");
  request.set_circuit_id("c");
  for (int p = 0; p < partitions; ++p) request.add_witness_bytes(bytes);
  return request;
}

proto::ErrorKind KindOf(const std::optional<Refusal>& refusal) {
  return refusal ? refusal->kind : proto::ERROR_KIND_UNSPECIFIED;
}

TEST(SubmitShape, AWellFormedSubmitPasses) {
  BrokerOptions options;
  EXPECT_FALSE(SubmitShapeProblem(Inline(100, 3), true, options));
  EXPECT_FALSE(NewJobShapeProblem(Inline(100, 3), 3, options));
}

TEST(SubmitShape, InlineByReferenceAndInputsDoNotMix) {
  BrokerOptions options;
  proto::SubmitRequest mixed = Inline(100);
  mixed.add_inputs("{}");
  auto refusal = SubmitShapeProblem(mixed, true, options);
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->kind, proto::ERROR_KIND_BAD_REQUEST);
  EXPECT_NE(refusal->why.find("not a mix"), std::string::npos) << refusal->why;
  proto::SubmitRequest both = Inline(100);
  auto* ref = both.add_witness_refs();
  ref->set_url("https://store/w");
  ref->set_size(100);
  EXPECT_NE(SubmitShapeProblem(both, false, options)->why.find("not both"), std::string::npos);
  proto::SubmitRequest nameless = Inline(100);
  nameless.clear_request_id();
  EXPECT_EQ(SubmitShapeProblem(nameless, true, options)->why, "SUBMIT without request_id");
}

TEST(SubmitShape, EverySizeBoundIsTooLargeNamingItsFlag) {
  BrokerOptions options;
  options.limits.max_witness_bytes = 1000;
  options.max_input_bytes = 10;
  auto big = SubmitShapeProblem(Inline(1001), true, options);
  EXPECT_EQ(KindOf(big), proto::ERROR_KIND_TOO_LARGE);
  EXPECT_NE(big->why.find("--max-witness-bytes"), std::string::npos) << big->why;
  proto::SubmitRequest input;
  input.set_request_id("r");
  input.add_inputs("{\"a\": \"12345\"}");
  auto long_input = SubmitShapeProblem(input, false, options);
  EXPECT_EQ(KindOf(long_input), proto::ERROR_KIND_TOO_LARGE);
  EXPECT_NE(long_input->why.find("--max-input-bytes"), std::string::npos);
  options.max_input_bytes = 1 << 20;
  proto::SubmitRequest not_json;
  not_json.set_request_id("r");
  not_json.add_inputs("{not json");
  EXPECT_NE(SubmitShapeProblem(not_json, false, options)->why.find("is not an input.json"), std::string::npos);
  options.max_inline_job_bytes = 1500;  // an etcd journal's bound
  auto etcd = SubmitShapeProblem(Inline(800, 2), true, options);
  EXPECT_EQ(KindOf(etcd), proto::ERROR_KIND_TOO_LARGE);
  EXPECT_NE(etcd->why.find("--max-inline-job-bytes"), std::string::npos);
  options.max_inline_job_bytes = 0;
  options.max_held_bytes_per_connection = 1500;
  EXPECT_NE(SubmitShapeProblem(Inline(800, 2), true, options)->why.find("--max-held-bytes-per-connection"),
            std::string::npos);
}

TEST(SubmitShape, ANewJobNeedsACircuitPartitionsAKnownPriorityAndATime) {
  BrokerOptions options;
  options.max_partitions = 4;
  proto::SubmitRequest request = Inline(10, 5);
  EXPECT_NE(NewJobShapeProblem(request, 5, options)->why.find("at most 4 (--max-partitions)"), std::string::npos);
  EXPECT_EQ(NewJobShapeProblem(request, 0, options)->why, "SUBMIT without witnesses");
  request.clear_circuit_id();
  EXPECT_EQ(NewJobShapeProblem(request, 1, options)->why, "SUBMIT without circuit_id");
  request.set_circuit_id("c");
  request.set_priority(static_cast<proto::Priority>(77));
  EXPECT_EQ(NewJobShapeProblem(request, 1, options)->why, "unknown priority value 77");
  request.set_priority(proto::PRIORITY_HIGH);
  for (double deadline : {-1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    request.set_deadline_unix_s(deadline);
    EXPECT_EQ(KindOf(NewJobShapeProblem(request, 1, options)), proto::ERROR_KIND_BAD_REQUEST) << deadline;
  }
  request.set_deadline_unix_s(0);
  EXPECT_FALSE(NewJobShapeProblem(request, 1, options));
}

}  // namespace
}  // namespace zkfleet::broker
