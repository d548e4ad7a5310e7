// Witnesses by reference on the client side, against a fake broker (a
// ROUTER socket here, plaintext): the SUBMIT the C++ client and zkctl send
// (references, digests, no witness frame), and the bad input they refuse
// before sending anything. Needs no zkbroker.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include "testutil/test_support.hpp"
#include "zkfleet/client.h"
#include "zkfleet/fetch/sha256.hpp"
#include "zkfleet/storage/journal.hpp"
#include "zkfleet/wire/protocol.hpp"
#include "zkfleet/wire/public_digest.hpp"

namespace {

namespace client = zkfleet::client;
namespace proto = zkfleet::proto;
using namespace std::chrono_literals;
using zkfleet::testing::Fixture;
using zkfleet::testing::RunCommand;

// What the fake broker received: the envelope and the frames after it.
struct Received {
  proto::Envelope envelope;
  size_t frames_after = 0;
};

// A ROUTER on a free port answering every SUBMIT with job 7 (QUEUED).
class FakeBroker {
 public:
  FakeBroker() : socket_(context_, zmq::socket_type::router) {
    socket_.set(zmq::sockopt::linger, 0);
    socket_.bind("tcp://127.0.0.1:*");
    endpoint_ = socket_.get(zmq::sockopt::last_endpoint);
  }
  const std::string& endpoint() const { return endpoint_; }
  // What a STATUS request is answered with.
  proto::StatusReply status_reply;

  // The next request within `timeout`, answered; nullopt if none came.
  std::optional<Received> Serve(std::chrono::milliseconds timeout) {
    zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, timeout) == 0) return std::nullopt;
    std::vector<zmq::message_t> parts;
    for (;;) {
      zmq::message_t part;
      if (!socket_.recv(part)) break;
      const bool more = part.more();
      parts.push_back(std::move(part));
      if (!more) break;
    }
    Received got;
    EXPECT_GE(parts.size(), 2u);
    if (parts.size() < 2) return got;
    EXPECT_TRUE(got.envelope.ParseFromArray(parts[1].data(), static_cast<int>(parts[1].size())));
    got.frames_after = parts.size() - 2;
    proto::Envelope reply;
    if (got.envelope.has_status()) {
      *reply.mutable_status_reply() = status_reply;
    } else {
      reply.mutable_submit_reply()->set_job_seq(7);
      reply.mutable_submit_reply()->set_state(proto::JOB_STATE_QUEUED);
    }
    reply.set_correlation_id(got.envelope.correlation_id());
    const std::string bytes = zkfleet::wire::EncodeEnvelope(reply);
    socket_.send(zmq::buffer(parts[0].to_string()), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(bytes), zmq::send_flags::none);
    return got;
  }

 private:
  zmq::context_t context_{1};
  zmq::socket_t socket_;
  std::string endpoint_;
};

std::unique_ptr<client::Client> OpenPlaintext(const std::string& endpoint) {
  client::Options options;
  options.endpoint = endpoint;
  options.insecure_plaintext = true;
  options.reply_timeout = zkfleet::testing::Scaled(10s);
  std::unique_ptr<client::Client> c;
  const client::Status s = client::Client::Open(options, &c);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return c;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::string Sha256Of(const std::string& bytes) { return zkfleet::fetch::Sha256::Of(bytes); }

std::string Hex(const std::string& bytes) { return zkfleet::wire::DigestHex(bytes); }

const std::string kPublicJson = R"(["33", "1"])";

TEST(ClientWitnessRefs, ASubmitByReferenceCarriesTheReferencesAndDigestsAndNoFrame) {
  FakeBroker broker;
  auto c = OpenPlaintext(broker.endpoint());
  client::SubmitOptions options;
  options.circuit = "transfer";
  options.request_id = "by-ref-1";
  options.witness_refs = {
      {"https://user:pw@store.example/w0.wtns?X-Amz-Signature=secret", 1000, std::string(32, 'a')},
      {"file:///shared/w1.wtns", 2000, std::string(32, 'b')},
  };
  options.expected_public_json = {kPublicJson, R"(["5"])"};
  client::Job job;
  client::Status status;
  std::thread submit([&] { status = c->Submit(options, {}, &job); });
  auto got = broker.Serve(zkfleet::testing::Scaled(10s));
  submit.join();
  ASSERT_TRUE(got.has_value());
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(job.job_seq, 7u);
  EXPECT_EQ(got->frames_after, 0u);  // no witness frame follows a reference SUBMIT
  ASSERT_TRUE(got->envelope.has_submit());
  const proto::SubmitRequest& request = got->envelope.submit();
  EXPECT_EQ(request.request_id(), "by-ref-1");
  EXPECT_EQ(request.circuit_id(), "transfer");
  EXPECT_EQ(request.witness_bytes_size(), 0);
  ASSERT_EQ(request.witness_refs_size(), 2);
  // The URL goes to the broker as given (the worker needs the credential).
  EXPECT_EQ(request.witness_refs(0).url(), options.witness_refs[0].url);
  EXPECT_EQ(request.witness_refs(0).size(), 1000u);
  EXPECT_EQ(request.witness_refs(0).sha256(), std::string(32, 'a'));
  EXPECT_EQ(request.witness_refs(1).url(), "file:///shared/w1.wtns");
  EXPECT_EQ(request.witness_refs(1).size(), 2000u);
  ASSERT_EQ(request.public_signals_sha256_size(), 2);
  EXPECT_EQ(request.public_signals_sha256(0), zkfleet::wire::PublicSignalsDigest({"33", "1"}));
  EXPECT_EQ(request.public_signals_sha256(1), zkfleet::wire::PublicSignalsDigest({"5"}));
}

TEST(ClientWitnessRefs, BadReferencesAreRefusedBeforeSending) {
  FakeBroker broker;
  auto c = OpenPlaintext(broker.endpoint());
  const std::string good_sha(32, 'x');
  struct Case {
    const char* what;
    std::vector<client::WitnessRef> refs;
    std::vector<client::Witness> witnesses;
    std::vector<std::string> expected_public;
    const char* message;
  };
  std::vector<Case> cases;
  cases.push_back({"short sha256", {{"https://s.example/w?sig=SECRET", 10, std::string(31, 'x')}}, {}, {},
                   "sha256 of 31 bytes"});
  cases.push_back({"hex instead of bytes", {{"https://s.example/w", 10, std::string(64, 'a')}}, {}, {},
                   "sha256 of 64 bytes"});
  cases.push_back({"size 0", {{"https://s.example/w", 0, good_sha}}, {}, {}, "size 0"});
  cases.push_back({"no URL", {{"", 10, good_sha}}, {}, {}, "without a URL"});
  cases.push_back({"ftp", {{"ftp://s.example/w", 10, good_sha}}, {}, {}, "not file://, http:// or https://"});
  cases.push_back({"space", {{"https://s.example/a b", 10, good_sha}}, {}, {}, "space or a control character"});
  cases.push_back({"too long", {{"https://s.example/" + std::string(client::kMaxWitnessUrlBytes, 'a'), 10, good_sha}},
                   {}, {}, "at most 4096"});
  cases.push_back({"mixed", {{"https://s.example/w", 10, good_sha}}, {client::Witness::FromBytes("wtns")}, {},
                   "not both"});
  cases.push_back({"public count", {{"https://s.example/w", 10, good_sha}, {"https://s.example/v", 10, good_sha}}, {},
                   {kPublicJson}, "1 expected public.json for 2 witness references"});
  cases.push_back({"bad public", {{"https://s.example/w", 10, good_sha}}, {}, {"[1, 2]"}, "not a string"});
  for (auto& test : cases) {
    client::SubmitOptions options;
    options.circuit = "transfer";
    options.witness_refs = test.refs;
    options.expected_public_json = test.expected_public;
    client::Job job;
    const client::Status s = c->Submit(options, std::move(test.witnesses), &job);
    EXPECT_EQ(s.code(), client::Code::kInvalidArgument) << test.what << ": " << s.ToString();
    EXPECT_NE(s.message().find(test.message), std::string::npos) << test.what << ": " << s.message();
    EXPECT_EQ(s.message().find("SECRET"), std::string::npos) << test.what << ": the URL is not redacted: " << s.message();
  }
  EXPECT_FALSE(broker.Serve(200ms).has_value()) << "a refused submit reached the broker";
}

// zkctl submit --witness-url against the fake broker: it hashes a readable
// file:// witness itself (size, SHA-256, and with --n-public its public
// signals), sends the references without frames, and prints URLs redacted.
class ZkctlWitnessRefs : public ::testing::Test {
 protected:
  // zkctl's output; the SUBMIT the broker got (if any) in `*got`.
  std::string Run(const std::string& args, int expected_exit, std::optional<Received>* got) {
    FakeBroker broker;
    zkfleet::testing::CommandResult result;
    std::thread run([&] {
      result = RunCommand(std::string(ZKFLEET_ZKCTL) + " --insecure-plaintext --broker " + broker.endpoint() +
                          " --timeout 10 " + args);
    });
    *got = broker.Serve(expected_exit == 0 ? zkfleet::testing::Scaled(15s) : std::chrono::milliseconds(0));
    run.join();
    if (expected_exit != 0 && !got->has_value()) *got = broker.Serve(100ms);
    EXPECT_EQ(result.exit_code, expected_exit) << args << "\n" << result.output;
    return result.output;
  }
};

TEST_F(ZkctlWitnessRefs, AFileUrlIsHashedHereAndItsPublicSignalsReadWithNPublic) {
  const std::string witness = Fixture("bn128_k12", "witness.wtns");
  const std::string bytes = ReadAll(witness);
  ASSERT_FALSE(bytes.empty());
  std::optional<Received> got;
  const std::string output =
      Run("submit --circuit bn128 --request-id zkctl-ref --witness-url file://" + witness + " --n-public 2", 0, &got);
  ASSERT_TRUE(got.has_value()) << output;
  EXPECT_EQ(got->frames_after, 0u);
  const auto& request = got->envelope.submit();
  EXPECT_EQ(request.request_id(), "zkctl-ref");
  ASSERT_EQ(request.witness_refs_size(), 1);
  EXPECT_EQ(request.witness_refs(0).url(), "file://" + witness);
  EXPECT_EQ(request.witness_refs(0).size(), bytes.size());
  EXPECT_EQ(Hex(request.witness_refs(0).sha256()), Hex(Sha256Of(bytes)));
  EXPECT_EQ(request.witness_bytes_size(), 0);
  // w[1..2] of the witness are the bundled public.json's signals.
  std::string why;
  auto expected = zkfleet::wire::PublicSignalsDigestOfJson(ReadAll(Fixture("bn128_k12", "public.json")), &why);
  ASSERT_TRUE(expected) << why;
  ASSERT_EQ(request.public_signals_sha256_size(), 1);
  EXPECT_EQ(Hex(request.public_signals_sha256(0)), Hex(*expected));
  EXPECT_NE(output.find("job 7 submitted"), std::string::npos) << output;
  EXPECT_NE(output.find("1 partition by reference"), std::string::npos) << output;
  EXPECT_NE(output.find(Hex(Sha256Of(bytes))), std::string::npos) << output;
}

TEST_F(ZkctlWitnessRefs, HttpUrlsWithGivenDigestsArePrintedRedacted) {
  const std::string sha0(64, 'a'), sha1(64, 'B');
  std::optional<Received> got;
  const std::string url0 = "'https://key:secret@s3.example/bucket/w0.wtns?X-Amz-Signature=SIGNATURE0&X-Amz-Expires=600'";
  const std::string url1 = "'http://store.example/w1.wtns#FRAGMENT'";
  const std::string public_json = Fixture("bn128_k12", "public.json");
  const std::string output =
      Run("--json submit --circuit bn128 --witness-url " + url0 + " --witness-url " + url1 + " --sha256 " + sha0 +
              " --sha256 " + sha1 + " --size 100 --size 200 --public-signals " + public_json + " --public-signals " +
              public_json,
          0, &got);
  ASSERT_TRUE(got.has_value()) << output;
  const auto& request = got->envelope.submit();
  ASSERT_EQ(request.witness_refs_size(), 2);
  EXPECT_EQ(request.witness_refs(0).url(),
            "https://key:secret@s3.example/bucket/w0.wtns?X-Amz-Signature=SIGNATURE0&X-Amz-Expires=600");
  EXPECT_EQ(request.witness_refs(0).size(), 100u);
  EXPECT_EQ(Hex(request.witness_refs(0).sha256()), sha0);
  EXPECT_EQ(Hex(request.witness_refs(1).sha256()), std::string(64, 'b'));
  EXPECT_EQ(request.witness_refs(1).size(), 200u);
  EXPECT_EQ(request.public_signals_sha256_size(), 2);
  EXPECT_EQ(got->frames_after, 0u);
  for (const char* secret : {"secret", "SIGNATURE0", "X-Amz", "FRAGMENT", "key:"}) {
    EXPECT_EQ(output.find(secret), std::string::npos) << secret << " printed:\n" << output;
  }
  EXPECT_NE(output.find("https://s3.example/bucket/w0.wtns"), std::string::npos) << output;
  EXPECT_NE(output.find("http://store.example/w1.wtns"), std::string::npos) << output;
}

TEST_F(ZkctlWitnessRefs, BadFlagsAreUsageErrorsAndNothingIsSent) {
  const std::string witness = Fixture("bn128_k12", "witness.wtns");
  const std::string sha(64, 'a');
  const std::string secret_url = "'https://s3.example/w.wtns?X-Amz-Signature=SECRET'";
  struct Case {
    std::string args, message;
  };
  const std::vector<Case> cases = {
      {"--witness-url " + secret_url, "give --sha256 and --size"},
      {"--witness-url " + secret_url + " --sha256 abc --size 5", "expected 64 hex digits"},
      {"--witness-url " + secret_url + " --sha256 " + std::string(63, 'a') + "g --size 5", "expected 64 hex digits"},
      {"--witness-url " + secret_url + " --witness-url " + secret_url + " --sha256 " + sha + " --size 5 --size 6",
       "1 --sha256 for 2 --witness-url"},
      {"--witness-url " + secret_url + " --sha256 " + sha, "go together"},
      {"--witness-url " + secret_url + " --sha256 " + sha + " --size 0", "size 0"},
      {"--witness-url file://" + witness + " " + witness, "not both"},
      {"--sha256 " + sha + " --size 5", "no --witness-url"},
      {"--witness-url file:///nonexistent/w.wtns", "cannot read /nonexistent/w.wtns"},
      {"--witness-url file://otherhost/w.wtns", "not a local file"},
      {"--witness-url ftp://s.example/w.wtns", "not file://, http:// or https://"},
      {"--witness-url file://" + witness + " --n-public 2 --public-signals " + Fixture("bn128_k12", "public.json"),
       "give one"},
      {"--n-public 2 " + witness, "--n-public reads"},
  };
  for (const auto& test : cases) {
    std::optional<Received> got;
    const std::string output = Run("submit --circuit bn128 " + test.args, 2, &got);
    EXPECT_FALSE(got.has_value()) << test.args << ": sent a SUBMIT";
    EXPECT_NE(output.find(test.message), std::string::npos) << test.args << ":\n" << output;
    EXPECT_EQ(output.find("SECRET"), std::string::npos) << test.args << ": the URL is not redacted:\n" << output;
  }
}

// zkctl journal reads a job of references from the broker's journal (here
// written directly) and never prints a URL's credential.
TEST(ZkctlJournalWitnessRefs, AJournaledReferenceIsShownRedacted) {
  zkfleet::testing::TempDir dir;
  const std::string data_dir = (dir.path() / "data").string();
  const std::string secret_url = "https://key:pw@s3.example/bucket/w0.wtns?X-Amz-Signature=SIGNATURE0#FRAGMENT";
  {
    zkfleet::storage::JournalOptions options;
    options.dir = data_dir;
    options.sync = zkfleet::storage::SyncMode::kNone;
    auto journal = zkfleet::storage::Journal::Open(options);
    const uint64_t job_seq = journal->TakeJobSeq();
    zkfleet::journal::Job job;
    job.set_job_seq(job_seq);
    job.set_client_id("app");
    job.set_request_id("by-ref");
    job.set_circuit_id("transfer");
    job.set_partitions(2);
    job.set_state(proto::JOB_STATE_QUEUED);
    auto* ref = job.add_witness_refs();
    ref->set_url(secret_url);
    ref->set_size(1000);
    ref->set_sha256(std::string(32, '\x11'));
    ref = job.add_witness_refs();
    ref->set_url("file:///mnt/witnesses/w1.wtns");
    ref->set_size(2000);
    ref->set_sha256(std::string(32, '\x22'));
    job.add_public_signals_sha256(std::string(32, '\x33'));
    job.add_public_signals_sha256(std::string(32, '\x44'));
    journal->PutJob(job);
    journal->Commit();
  }
  for (const std::string& args : {std::string("journal --data-dir ") + data_dir + " --job 1",
                                  std::string("--json journal --data-dir ") + data_dir + " --job 1",
                                  std::string("--json journal --data-dir ") + data_dir,
                                  std::string("journal --data-dir ") + data_dir}) {
    const auto result = RunCommand(std::string(ZKFLEET_ZKCTL) + " " + args);
    EXPECT_EQ(result.exit_code, 0) << args << "\n" << result.output;
    for (const char* secret : {"SIGNATURE0", "X-Amz", "key:pw", "FRAGMENT"}) {
      EXPECT_EQ(result.output.find(secret), std::string::npos) << args << ": " << secret << " shown:\n" << result.output;
    }
    if (args.find("--job") != std::string::npos) {
      EXPECT_NE(result.output.find("https://s3.example/bucket/w0.wtns"), std::string::npos) << result.output;
      EXPECT_NE(result.output.find("file:///mnt/witnesses/w1.wtns"), std::string::npos) << result.output;
      EXPECT_NE(result.output.find(std::string(64, '1')), std::string::npos) << result.output;  // the witness digest
      EXPECT_NE(result.output.find(std::string(64, '4')), std::string::npos) << result.output;  // a public digest
    }
  }
}

}  // namespace

// ---------------------------------------------------------------- jobs from inputs (issue 31)

namespace inputs {

// Byte for byte what the user wrote: spacing, key order, unicode, big numbers.
const std::string kInput0 = "{\n  \"a\": \"3\",\n  \"b\": [\"1\", \"2\"],\n  \"name\": \"caf\xc3\xa9\"\n}\n";
const std::string kInput1 = R"({"b":["21888242871839275222246405745257275088548364400416034343698204186575808495616","0"],"a":5})";

TEST(ClientInputs, ASubmitOfInputsCarriesEachInputJsonUnchangedAndNoFrame) {
  FakeBroker broker;
  auto c = OpenPlaintext(broker.endpoint());
  client::SubmitOptions options;
  options.circuit = "transfer";
  options.request_id = "from-inputs-1";
  options.inputs = {kInput0, kInput1};
  client::Job job;
  client::Status status;
  std::thread submit([&] { status = c->Submit(options, {}, &job); });
  auto got = broker.Serve(zkfleet::testing::Scaled(10s));
  submit.join();
  ASSERT_TRUE(got.has_value());
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(job.job_seq, 7u);
  EXPECT_EQ(got->frames_after, 0u);
  const proto::SubmitRequest& request = got->envelope.submit();
  EXPECT_EQ(request.request_id(), "from-inputs-1");
  EXPECT_EQ(request.circuit_id(), "transfer");
  EXPECT_EQ(request.witness_bytes_size(), 0);
  EXPECT_EQ(request.witness_refs_size(), 0);
  ASSERT_EQ(request.inputs_size(), 2);
  EXPECT_EQ(request.inputs(0), kInput0);
  EXPECT_EQ(request.inputs(1), kInput1);
  EXPECT_EQ(request.public_signals_sha256_size(), 0);  // optional for inputs

  // With the public signals the client expects: their digests go along.
  options.request_id = "from-inputs-2";
  options.inputs = {kInput1};
  options.expected_public_json = {kPublicJson};
  std::thread again([&] { status = c->Submit(options, {}, &job); });
  got = broker.Serve(zkfleet::testing::Scaled(10s));
  again.join();
  ASSERT_TRUE(got.has_value());
  ASSERT_TRUE(status.ok()) << status.ToString();
  ASSERT_EQ(got->envelope.submit().inputs_size(), 1);
  EXPECT_EQ(got->envelope.submit().inputs(0), kInput1);
  ASSERT_EQ(got->envelope.submit().public_signals_sha256_size(), 1);
  EXPECT_EQ(got->envelope.submit().public_signals_sha256(0), zkfleet::wire::PublicSignalsDigest({"33", "1"}));
}

TEST(ClientInputs, BadInputsAreRefusedBeforeSending) {
  FakeBroker broker;
  auto c = OpenPlaintext(broker.endpoint());
  struct Case {
    const char* what;
    std::vector<std::string> inputs;
    std::vector<client::Witness> witnesses;
    std::vector<client::WitnessRef> refs;
    std::vector<std::string> expected_public;
    const char* message;
  };
  std::string deep = "{\"a\": " + std::string(40, '[') + std::string(40, ']') + "}";
  std::vector<Case> cases;
  cases.push_back({"array", {kInput0, "[1, 2]"}, {}, {}, {}, "input of partition 1 is not an input.json"});
  cases.push_back({"not JSON", {"{\"a\": "}, {}, {}, {}, "not valid JSON"});
  cases.push_back({"empty", {""}, {}, {}, {}, "empty"});
  cases.push_back({"deep", {deep}, {}, {}, {}, "deeper than 32"});
  cases.push_back({"with a witness", {kInput0}, {client::Witness::FromBytes("wtns")}, {}, {}, "one of them"});
  cases.push_back({"with a reference", {kInput0}, {}, {{"https://s.example/w", 10, std::string(32, 'x')}}, {},
                   "one of them"});
  cases.push_back({"public count", {kInput0, kInput1}, {}, {}, {kPublicJson}, "1 expected public.json for 2 inputs"});
  for (auto& test : cases) {
    client::SubmitOptions options;
    options.circuit = "transfer";
    options.inputs = test.inputs;
    options.witness_refs = test.refs;
    options.expected_public_json = test.expected_public;
    client::Job job;
    const client::Status s = c->Submit(options, std::move(test.witnesses), &job);
    EXPECT_EQ(s.code(), client::Code::kInvalidArgument) << test.what << ": " << s.ToString();
    EXPECT_NE(s.message().find(test.message), std::string::npos) << test.what << ": " << s.message();
  }
  EXPECT_FALSE(broker.Serve(200ms).has_value()) << "a refused submit reached the broker";
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

class ZkctlInputs : public ZkctlWitnessRefs {
 protected:
  zkfleet::testing::TempDir dir_;
  std::string Path(const std::string& name, const std::string& bytes) {
    const std::string path = (dir_.path() / name).string();
    WriteFile(path, bytes);
    return path;
  }
};

TEST_F(ZkctlInputs, EachInputFileIsSentAsItsPartitionsInputAndShownOnlyAsSizeAndDigest) {
  const std::string in0 = Path("in0.json", kInput0), in1 = Path("in1.json", kInput1);
  std::optional<Received> got;
  std::string output = Run("submit --circuit c --request-id zkctl-in --input " + in0 + " --input " + in1, 0, &got);
  ASSERT_TRUE(got.has_value()) << output;
  EXPECT_EQ(got->frames_after, 0u);
  const auto& request = got->envelope.submit();
  EXPECT_EQ(request.request_id(), "zkctl-in");
  ASSERT_EQ(request.inputs_size(), 2);
  EXPECT_EQ(request.inputs(0), kInput0);
  EXPECT_EQ(request.inputs(1), kInput1);
  EXPECT_EQ(request.witness_bytes_size(), 0);
  EXPECT_EQ(request.witness_refs_size(), 0);
  EXPECT_EQ(request.public_signals_sha256_size(), 0);
  EXPECT_NE(output.find("2 partitions from inputs"), std::string::npos) << output;

  const std::string public_json = Fixture("bn128_k12", "public.json");
  output = Run("--json submit --circuit c --input " + in1 + " --public-signals " + public_json, 0, &got);
  ASSERT_TRUE(got.has_value()) << output;
  ASSERT_EQ(got->envelope.submit().inputs_size(), 1);
  EXPECT_EQ(got->envelope.submit().inputs(0), kInput1);
  EXPECT_EQ(got->envelope.submit().public_signals_sha256_size(), 1);
  EXPECT_NE(output.find(Hex(Sha256Of(kInput1))), std::string::npos) << output;
  EXPECT_EQ(output.find("2188824287183927522224640574525727508854836440041603434369820418657580849561"),
            std::string::npos)
      << "the input's content was printed:\n" << output;
}

TEST_F(ZkctlInputs, BadInputFlagsAreUsageErrorsAndNothingIsSent) {
  const std::string good = Path("good.json", kInput0);
  const std::string array = Path("array.json", "[1, 2, 3]");
  const std::string broken = Path("broken.json", "{\"a\": \"1\",");
  const std::string witness = Fixture("bn128_k12", "witness.wtns");
  struct Case {
    std::string args, message;
  };
  const std::vector<Case> cases = {
      {"--input " + good + " " + witness, "1 --input with 1 witness files"},
      {"--input " + good + " --witness-url https://s.example/w.wtns --sha256 " + std::string(64, 'a') + " --size 5",
       "1 --input with 1 --witness-url"},
      {"--input " + good + " --input " + array, array + " (partition 1) is not an input.json"},
      {"--input " + broken, broken + " (partition 0) is not an input.json: not valid JSON"},
      {"--input " + witness, "is not an input.json"},
      {"--input /nonexistent/input.json", "cannot read"},
      {"--input " + good + " --input " + good + " --public-signals " + Fixture("bn128_k12", "public.json"),
       "1 --public-signals for 2 --input"},
  };
  for (const auto& test : cases) {
    std::optional<Received> got;
    const std::string output = Run("submit --circuit c " + test.args, 2, &got);
    EXPECT_FALSE(got.has_value()) << test.args << ": sent a SUBMIT";
    EXPECT_NE(output.find(test.message), std::string::npos) << test.args << ":\n" << output;
  }
}

// zkctl journal shows a job from inputs with each input's size and digest, never its content.
TEST(ZkctlJournalInputs, AJournaledJobFromInputsShowsSizesAndDigestsOnly) {
  zkfleet::testing::TempDir dir;
  const std::string data_dir = (dir.path() / "data").string();
  const std::string secret_input = R"({"secret": "SECRET-PREIMAGE"})";
  {
    zkfleet::storage::JournalOptions options;
    options.dir = data_dir;
    options.sync = zkfleet::storage::SyncMode::kNone;
    auto journal = zkfleet::storage::Journal::Open(options);
    zkfleet::journal::Job job;
    job.set_job_seq(journal->TakeJobSeq());
    job.set_request_id("from-inputs");
    job.set_circuit_id("transfer");
    job.set_partitions(1);
    job.set_state(proto::JOB_STATE_QUEUED);
    job.set_witness_bytes(secret_input.size());
    job.add_inputs(secret_input);
    journal->PutJob(job);
    journal->Commit();
  }
  for (const std::string& args : {std::string("journal --data-dir ") + data_dir + " --job 1",
                                  std::string("--json journal --data-dir ") + data_dir + " --job 1"}) {
    const auto result = RunCommand(std::string(ZKFLEET_ZKCTL) + " " + args);
    EXPECT_EQ(result.exit_code, 0) << args << "\n" << result.output;
    EXPECT_EQ(result.output.find("SECRET-PREIMAGE"), std::string::npos) << args << ":\n" << result.output;
    EXPECT_NE(result.output.find(Hex(Sha256Of(secret_input))), std::string::npos) << args << ":\n" << result.output;
  }
}

// zkctl workers (and --json) shows the circuits each worker generates witnesses for.
TEST(ZkctlWorkersInputs, WorkersShowWhatTheyGenerate) {
  for (const std::string& json : {std::string(""), std::string("--json ")}) {
    FakeBroker broker;
    auto* worker = broker.status_reply.add_workers();
    worker->set_worker_id("gen-1");
    worker->set_state(proto::WORKER_STATE_READY);
    worker->add_circuits("transfer");
    worker->add_circuits("withdraw");
    worker->add_generates("withdraw-only-gen");
    zkfleet::testing::CommandResult result;
    std::thread run([&] {
      result = RunCommand(std::string(ZKFLEET_ZKCTL) + " --insecure-plaintext --broker " + broker.endpoint() +
                          " --timeout 10 " + json + "workers");
    });
    auto got = broker.Serve(zkfleet::testing::Scaled(15s));
    run.join();
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(result.exit_code, 0) << result.output;
    EXPECT_NE(result.output.find(json.empty() ? "GENERATES" : "\"generates\""), std::string::npos) << result.output;
    EXPECT_NE(result.output.find("withdraw-only-gen"), std::string::npos) << result.output;
  }
}

}  // namespace inputs
