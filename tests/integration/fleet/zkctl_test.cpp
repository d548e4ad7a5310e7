// zkctl's other subcommands: status, workers, await, cancel, and its errors.
#include <gtest/gtest.h>

#include <regex>

#include "fleet_harness.hpp"

namespace fleet_test {
namespace {

TEST(Zkctl, StatusWorkersAwaitCancel) {
  Fleet fleet("zkctl");
  fleet.StartBroker();
  fleet.StartWorker("slowpoke", {"--instant", "--instant-delay-ms", "400", "--circuit", "c1", "--capacity", "1"});
  fleet.WaitWorkerReady("slowpoke");
  std::string witness = Fixture("bn128_k12/witness.wtns");
  std::string out;

  // Three jobs; the first occupies the worker (capacity 1), the others wait.
  ASSERT_EQ(fleet.Zkctl({"submit", "--circuit", "c1", "--priority", "high", witness}, &out), 0) << out;
  EXPECT_NE(out.find("job 1 submitted"), std::string::npos) << out;
  ASSERT_EQ(fleet.Zkctl({"submit", "--circuit", "c1", "--priority", "low", witness, witness}, &out), 0) << out;
  ASSERT_EQ(fleet.Zkctl({"submit", "--circuit", "c1", witness}, &out), 0) << out;

  ASSERT_EQ(fleet.Zkctl({"status"}, &out), 0) << out;
  EXPECT_TRUE(std::regex_search(out, std::regex(R"(LOW\s+2\s+\d+\.\d)"))) << out;     // 2 items of job 2 queued
  EXPECT_TRUE(std::regex_search(out, std::regex(R"(NORMAL\s+1\s+\d+\.\d)"))) << out;  // job 3
  EXPECT_TRUE(std::regex_search(out, std::regex(R"(slowpoke\s+READY\s+\S+\s+instant\s+c1\s+1\s+0\s+1)"))) << out;

  ASSERT_EQ(fleet.Zkctl({"workers", "--json"}, &out), 0) << out;
  EXPECT_NE(out.find("\"worker_id\": \"slowpoke\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"state\": \"READY\""), std::string::npos) << out;

  ASSERT_EQ(fleet.Zkctl({"cancel", "2"}, &out), 0) << out;
  EXPECT_NE(out.find("job 2 cancelled"), std::string::npos) << out;
  EXPECT_EQ(fleet.Zkctl({"await", "2"}, &out), 3) << out;  // ended, but not SUCCEEDED
  EXPECT_NE(out.find("CANCELLED"), std::string::npos) << out;

  ASSERT_EQ(fleet.Zkctl({"await", "3", "--out", fleet.dir() + "/out3"}, &out), 0) << out;
  EXPECT_NE(out.find("job 3  SUCCEEDED"), std::string::npos) << out;
  EXPECT_NE(ReadFile(fleet.dir() + "/out3/proof_0.json").find("benchmark"), std::string::npos);

  EXPECT_EQ(fleet.Zkctl({"await", "99"}, &out), 1) << out;
  EXPECT_NE(out.find("UNKNOWN_JOB"), std::string::npos) << out;
  EXPECT_EQ(fleet.Zkctl({"drain", "nobody"}, &out), 1) << out;
  EXPECT_NE(out.find("UNKNOWN_WORKER"), std::string::npos) << out;
  EXPECT_EQ(fleet.Zkctl({"submit", "--circuit", "c1", "--priority", "urgent", witness}, &out), 1) << out;
  EXPECT_NE(out.find("--priority urgent"), std::string::npos) << out;
}

TEST(Zkctl, NoBrokerIsAClearError) {
  std::string out;
  int code = RunCommand({BinaryPath("zkctl"), "--broker", "tcp://127.0.0.1:" + std::to_string(FreePort()),
                         "--timeout", "0.3", "status"},
                        &out);
  EXPECT_EQ(code, 1);
  EXPECT_NE(out.find("no reply from the broker"), std::string::npos) << out;
}

}  // namespace
}  // namespace fleet_test
