// The broker's allow-lists (loading, roles, bad files, duplicates) and its
// ZAP handler: the policy through hand-made ZAP requests, then real CURVE
// handshakes on TCP ROUTERs in one context, pumping HandleOne like the broker
// loop will.
#include <unistd.h>

#include <zmq.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <zmq.hpp>

#include "zkfleet/broker/peer_allow_list.hpp"
#include "zkfleet/broker/zap_handler.hpp"
#include "zkfleet/common/error.hpp"
#include "zkfleet/fleet/curve_keys.hpp"
#include "new_keys.hpp"

namespace zkfleet::broker {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

// A fresh directory, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("zkfleet-zap-" + std::to_string(getpid()) + "-" + std::to_string(counter_++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }
  void Write(const std::string& relative, const std::string& text) const {
    fs::create_directories((path_ / relative).parent_path());
    std::ofstream(path_ / relative) << text;
  }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

bool Mentions(const std::vector<std::string>& warnings, const std::string& what) {
  for (const auto& w : warnings) {
    if (w.find(what) != std::string::npos) return true;
  }
  return false;
}

std::string Dump(const std::vector<std::string>& warnings) {
  std::string out;
  for (const auto& w : warnings) out += "  " + w + "\n";
  return out;
}

AllowedPeer Peer(const std::string& name, PeerKind kind, const Keys& keys, Role role = Role::kSubmit) {
  AllowedPeer p;
  p.name = name;
  p.kind = kind;
  p.role = role;
  p.key = *DecodeZ85Key(keys.pub);
  return p;
}

// ---- PeerAllowList ----

TEST(PeerAllowList, LoadsWorkersAndClientsWithRoles) {
  TempDir dir;
  Keys gpu = NewKeys(), ci = NewKeys(), root = NewKeys(), viewer = NewKeys();
  dir.Write("workers/gpu-1.pub", "# zkfleet CURVE public key\npublic-key = " + gpu.pub + "\n");
  dir.Write("clients/ci.pub", ci.pub + "   # the CI runner\n\n");
  dir.Write("clients/root.pub", "# operators\n" + root.pub + "\nrole = admin\n");
  dir.Write("clients/viewer", "role=observe\npublic-key = \"" + viewer.pub + "\"\n");
  dir.Write("clients/.viewer.pub.swp", "junk");  // hidden: ignored silently

  PeerAllowList::LoadResult loaded = PeerAllowList::Load(dir.path());
  EXPECT_TRUE(loaded.warnings.empty()) << Dump(loaded.warnings);
  const PeerAllowList& list = loaded.list;
  EXPECT_EQ(list.size(), 4u);
  EXPECT_EQ(list.count(PeerKind::kWorker), 1u);
  EXPECT_EQ(list.count(PeerKind::kClient), 3u);

  const AllowedPeer* p = list.FindZ85(gpu.pub);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->name, "gpu-1");
  EXPECT_EQ(p->kind, PeerKind::kWorker);
  EXPECT_EQ(p->z85, gpu.pub);
  EXPECT_EQ(p->file, dir.path() / "workers/gpu-1.pub");

  p = list.Find(*DecodeZ85Key(ci.pub));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->name, "ci");
  EXPECT_EQ(p->kind, PeerKind::kClient);
  EXPECT_EQ(p->role, Role::kSubmit);  // the default
  EXPECT_EQ(list.FindZ85(root.pub)->role, Role::kAdmin);
  EXPECT_EQ(list.FindZ85(viewer.pub)->name, "viewer");
  EXPECT_EQ(list.FindZ85(viewer.pub)->role, Role::kObserve);

  EXPECT_EQ(list.FindZ85(NewKeys().pub), nullptr);
  EXPECT_EQ(list.FindZ85("short"), nullptr);
  CurveKey key = *DecodeZ85Key(ci.pub);
  EXPECT_EQ(list.Find(key.data(), 31), nullptr);
  EXPECT_EQ(list.peers().front().kind, PeerKind::kWorker);  // workers first

  EXPECT_STREQ(RoleName(Role::kObserve), "observe");
  EXPECT_STREQ(PeerKindName(PeerKind::kWorker), "worker");
  EXPECT_EQ(ParseRole("admin"), Role::kAdmin);
  EXPECT_EQ(ParseRole("root"), std::nullopt);
}

TEST(PeerAllowList, KeysWithHashAndEqualsCharactersParse) {
  // '#' and '=' are Z85 characters: find keys holding them (about 4 in 10 do).
  std::vector<Keys> keys;
  for (int i = 0; i < 500 && keys.size() < 4; ++i) {
    Keys k = NewKeys();
    if (k.pub.find('#') != std::string::npos || k.pub.find('=') != std::string::npos) keys.push_back(k);
  }
  ASSERT_EQ(keys.size(), 4u);
  TempDir dir;
  fs::create_directories(dir.path() / "workers");
  for (size_t i = 0; i < keys.size(); ++i) {
    dir.Write("clients/c" + std::to_string(i) + ".pub", keys[i].pub + (i % 2 ? " # note\n" : "\n"));
  }
  PeerAllowList::LoadResult loaded = PeerAllowList::Load(dir.path());
  EXPECT_TRUE(loaded.warnings.empty()) << Dump(loaded.warnings);
  for (size_t i = 0; i < keys.size(); ++i) {
    const AllowedPeer* p = loaded.list.FindZ85(keys[i].pub);
    ASSERT_NE(p, nullptr) << keys[i].pub;
    EXPECT_EQ(p->name, "c" + std::to_string(i));
  }
}

TEST(PeerAllowList, BadFilesAreSkippedWithWarnings) {
  TempDir dir;
  Keys good = NewKeys(), worker = NewKeys();
  std::string bad_z85 = good.pub;
  bad_z85[7] = '~';  // not a Z85 character
  dir.Write("clients/good.pub", good.pub + "\n");
  dir.Write("workers/w.pub", worker.pub + "\n");
  dir.Write("clients/badz85.pub", bad_z85 + "\n");
  dir.Write("clients/short.pub", good.pub.substr(0, 39) + "\n");
  dir.Write("clients/empty.pub", "# nothing here\n");
  dir.Write("clients/two.pub", NewKeys().pub + "\n" + NewKeys().pub + "\n");
  dir.Write("clients/badrole.pub", NewKeys().pub + "\nrole = root\n");
  dir.Write("clients/tworoles.pub", NewKeys().pub + "\nrole = admin\nrole = submit\n");
  dir.Write("clients/unknown.pub", NewKeys().pub + "\nquota = 5\n");
  dir.Write("clients/bad name.pub", NewKeys().pub + "\n");
  Keys pair = NewKeys();
  dir.Write("clients/me.secret", "public-key = " + pair.pub + "\nsecret-key = " + pair.sec + "\n");
  dir.Write("clients/leaked.pub", "public-key = " + pair.pub + "\nsecret-key = " + pair.sec + "\n");
  dir.Write("workers/roled.pub", NewKeys().pub + "\nrole = admin\n");
  fs::create_directories(dir.path() / "clients/nested");

  PeerAllowList::LoadResult loaded = PeerAllowList::Load(dir.path());
  const PeerAllowList& list = loaded.list;
  EXPECT_EQ(list.size(), 2u) << Dump(loaded.warnings);
  EXPECT_NE(list.FindZ85(good.pub), nullptr);
  EXPECT_NE(list.FindZ85(worker.pub), nullptr);
  EXPECT_EQ(list.FindZ85(pair.pub), nullptr);
  for (const char* file : {"badz85.pub", "short.pub", "empty.pub", "two.pub", "badrole.pub", "tworoles.pub",
                           "unknown.pub", "bad name.pub", "me.secret", "leaked.pub", "roled.pub", "nested"}) {
    EXPECT_TRUE(Mentions(loaded.warnings, file)) << file << " not reported in:\n" << Dump(loaded.warnings);
  }
  EXPECT_EQ(loaded.warnings.size(), 12u) << Dump(loaded.warnings);
  EXPECT_TRUE(Mentions(loaded.warnings, "not valid Z85"));
  EXPECT_TRUE(Mentions(loaded.warnings, "role 'root' is not one of"));
  EXPECT_TRUE(Mentions(loaded.warnings, "a worker key has no role"));
}

TEST(PeerAllowList, DuplicateKeysAndNamesKeepTheFirst) {
  TempDir dir;
  Keys shared = NewKeys(), twice = NewKeys(), a1 = NewKeys(), a2 = NewKeys();
  dir.Write("workers/gpu.pub", shared.pub + "\n");
  dir.Write("clients/alice.pub", shared.pub + "\nrole = admin\n");  // a worker's key as a client: refused
  dir.Write("clients/b1.pub", twice.pub + "\n");
  dir.Write("clients/b2.pub", twice.pub + "\n");
  dir.Write("clients/carol.key", a1.pub + "\n");
  dir.Write("clients/carol.pub", a2.pub + "\n");  // same NAME, other key

  PeerAllowList::LoadResult loaded = PeerAllowList::Load(dir.path());
  const PeerAllowList& list = loaded.list;
  EXPECT_EQ(loaded.warnings.size(), 3u) << Dump(loaded.warnings);
  EXPECT_TRUE(Mentions(loaded.warnings, "alice.pub: key " + shared.pub + " is already listed as worker 'gpu'"))
      << Dump(loaded.warnings);
  EXPECT_TRUE(Mentions(loaded.warnings, "b2.pub")) << Dump(loaded.warnings);
  EXPECT_TRUE(Mentions(loaded.warnings, "client name 'carol' is already used by")) << Dump(loaded.warnings);
  EXPECT_EQ(list.FindZ85(shared.pub)->kind, PeerKind::kWorker);
  EXPECT_EQ(list.FindZ85(twice.pub)->name, "b1");
  EXPECT_EQ(list.FindZ85(a1.pub)->name, "carol");
  EXPECT_EQ(list.FindZ85(a2.pub), nullptr);
  EXPECT_EQ(list.size(), 3u);

  // The same worker name as a client name is fine: the domains differ.
  std::vector<std::string> warnings;
  PeerAllowList mixed = PeerAllowList::FromPeers({Peer("x", PeerKind::kWorker, a1), Peer("x", PeerKind::kClient, a2)}, &warnings);
  EXPECT_TRUE(warnings.empty()) << Dump(warnings);
  EXPECT_EQ(mixed.size(), 2u);
}

// One grammar for key files: a file reads the same as a peer's public key
// (fleet::ReadPublicKeyFile, e.g. --broker-public-key) and as an allow-list
// entry. Before, two parsers disagreed: the allow-list accepted a quoted
// value and a trailing " # comment" that ReadPublicKeyFile refused, and
// ReadPublicKeyFile refused a role line ("unknown name 'role'") that makes a
// client's allow-list entry; they also differed in what they took for a
// bare key and in their messages.
TEST(PeerAllowList, KeyFilesReadTheSameAsPublicKeysAndAsAllowListEntries) {
  const Keys k = NewKeys();
  struct Case {
    const char* name;
    std::string text;
    bool valid;
  };
  const std::vector<Case> cases = {
      {"plain", "# zkfleet CURVE public key\npublic-key = " + k.pub + "\n", true},
      {"bare", "  " + k.pub + " \r\n", true},
      {"quoted", "public-key = \"" + k.pub + "\"\n", true},        // formerly: allow-list only
      {"trailing_comment", k.pub + "   # the CI runner\n", true},  // formerly: allow-list only
      {"with_role", "public-key = " + k.pub + "\nrole = admin\n", true},  // formerly: allow-list only
      {"tight_truncated", "public-key=" + k.pub.substr(0, 29) + "\n", false},
      {"unknown_name", k.pub + "\nquota = 5\n", false},
      {"two_keys", k.pub + "\n" + NewKeys().pub + "\n", false},
      {"two_roles", k.pub + "\nrole = admin\nrole = observe\n", false},
      {"short", k.pub.substr(0, 39) + "\n", false},
      {"overflow", "public-key = %%%%%" + k.pub.substr(5) + "\n", false},
      {"empty", "# nothing here\n", false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    TempDir dir;
    fs::create_directories(dir.path() / "workers");
    dir.Write(std::string("clients/") + c.name + ".pub", c.text);
    std::optional<std::string> as_public_key;
    std::string error;
    try {
      as_public_key = fleet::ReadPublicKeyFile(dir.path() / "clients" / (std::string(c.name) + ".pub"));
    } catch (const Error& e) {
      error = e.what();
    }
    PeerAllowList::LoadResult loaded = PeerAllowList::Load(dir.path());
    EXPECT_EQ(as_public_key.has_value(), c.valid) << error;
    EXPECT_EQ(loaded.list.size(), c.valid ? 1u : 0u) << Dump(loaded.warnings);
    if (c.valid) {
      EXPECT_EQ(*as_public_key, k.pub);
      ASSERT_NE(loaded.list.FindZ85(k.pub), nullptr);
      EXPECT_TRUE(loaded.warnings.empty()) << Dump(loaded.warnings);
    } else {
      // The same words both ways after the file's path: the line, then what is wrong.
      ASSERT_EQ(loaded.warnings.size(), 1u) << Dump(loaded.warnings);
      const std::string path = (dir.path() / "clients" / (std::string(c.name) + ".pub")).string();
      auto after_path = [&](const std::string& message) {
        const size_t at = message.find(path);
        return at == std::string::npos ? message : message.substr(at + path.size());
      };
      EXPECT_EQ(after_path(loaded.warnings[0]), after_path(error) + "; skipped");
    }
  }
  // Where the readers do differ, it is what a file must hold, not how it reads:
  // a role is for clients/ only, and for no peer's own secret key file.
  TempDir dir;
  dir.Write("workers/w.pub", k.pub + "\nrole = admin\n");
  EXPECT_TRUE(Mentions(PeerAllowList::Load(dir.path()).warnings, "a worker key has no role"));
}

TEST(PeerAllowList, MissingDirectoryThrowsMissingSubdirectoryWarns) {
  TempDir dir;
  try {
    PeerAllowList::Load(dir.path() / "nope");
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_NE(std::string(e.what()).find("nope"), std::string::npos) << e.what();
  }
  dir.Write("clients/c.pub", NewKeys().pub + "\n");
  PeerAllowList::LoadResult loaded = PeerAllowList::Load(dir.path());
  EXPECT_EQ(loaded.list.size(), 1u);
  ASSERT_EQ(loaded.warnings.size(), 1u) << Dump(loaded.warnings);
  EXPECT_TRUE(Mentions(loaded.warnings, "workers: no such directory; no worker keys are allowed"))
      << Dump(loaded.warnings);
  EXPECT_EQ(PeerAllowList().size(), 0u);
}

// ---- ZapHandler: the policy through hand-made ZAP requests ----

struct ZapReply {
  std::string version, request_id, status, text, user_id, metadata;
};

class ZapRequester {
 public:
  ZapRequester(zmq::context_t& context, ZapHandler& handler) : req_(context, zmq::socket_type::req), handler_(handler) {
    req_.set(zmq::sockopt::linger, 0);
    req_.connect(kZapEndpoint);
  }
  ZapReply Ask(const std::vector<std::string>& frames) {
    for (size_t i = 0; i < frames.size(); ++i) {
      req_.send(zmq::buffer(frames[i]), i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    }
    auto deadline = std::chrono::steady_clock::now() + milliseconds(1000);
    while (!handler_.HandleOne()) {
      if (std::chrono::steady_clock::now() > deadline) ADD_FAILURE() << "no ZAP request arrived";
      if (std::chrono::steady_clock::now() > deadline) return {};
      zmq::pollitem_t item{handler_.socket().handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, milliseconds(10));
    }
    std::vector<std::string> parts;
    zmq::message_t m;
    do {
      (void)req_.recv(m);
      parts.emplace_back(m.to_string());
    } while (m.more());
    EXPECT_EQ(parts.size(), 6u);
    parts.resize(6);
    return {parts[0], parts[1], parts[2], parts[3], parts[4], parts[5]};
  }
  ZapReply Curve(const char* domain, const std::string& z85) {
    CurveKey key = *DecodeZ85Key(z85);
    return Ask({"1.0", "7", domain, "10.0.0.9", "", "CURVE", std::string(key.begin(), key.end())});
  }

 private:
  zmq::socket_t req_;
  ZapHandler& handler_;
};

std::string Property(std::string_view name, std::string_view value) {
  std::string out(1, static_cast<char>(name.size()));
  out += name;
  uint32_t n = static_cast<uint32_t>(value.size());
  out += {static_cast<char>(n >> 24), static_cast<char>(n >> 16), static_cast<char>(n >> 8), static_cast<char>(n)};
  out += value;
  return out;
}

TEST(ZapHandler, PolicyOverTheZapProtocol) {
  zmq::context_t context;
  Keys worker = NewKeys(), client = NewKeys(), stranger = NewKeys();
  ZapHandler zap(context,
                 PeerAllowList::FromPeers({Peer("gpu-1", PeerKind::kWorker, worker),
                                       Peer("ops", PeerKind::kClient, client, Role::kAdmin)}));
  std::vector<std::pair<PeerKind, RejectReason>> callbacks;
  zap.set_on_rejected([&](PeerKind e, RejectReason r) { callbacks.emplace_back(e, r); });
  ZapRequester req(context, zap);

  ZapReply r = req.Curve(kClientZapDomain, client.pub);
  EXPECT_EQ(r.version, "1.0");
  EXPECT_EQ(r.request_id, "7");
  EXPECT_EQ(r.status, "200");
  EXPECT_EQ(r.user_id, "ops");
  EXPECT_EQ(r.metadata, Property("Kind", "client") + Property("Role", "admin"));

  r = req.Curve(kWorkerZapDomain, worker.pub);
  EXPECT_EQ(r.status, "200");
  EXPECT_EQ(r.user_id, "gpu-1");
  EXPECT_EQ(r.metadata, Property("Kind", "worker"));
  EXPECT_EQ(zap.accepted(PeerKind::kWorker), 1u);
  EXPECT_EQ(zap.accepted(PeerKind::kClient), 1u);

  r = req.Curve(kClientZapDomain, worker.pub);
  EXPECT_EQ(r.status, "400");
  EXPECT_EQ(r.text, "wrong_endpoint");
  EXPECT_EQ(r.user_id, "");
  r = req.Curve(kWorkerZapDomain, client.pub);
  EXPECT_EQ(r.status, "400");
  EXPECT_EQ(zap.rejected(PeerKind::kClient, RejectReason::kWrongEndpoint), 1u);
  EXPECT_EQ(zap.rejected(PeerKind::kWorker, RejectReason::kWrongEndpoint), 1u);

  // An unknown key, three times: counted three times, logged once.
  uint64_t logs = zap.rejection_logs();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(req.Curve(kWorkerZapDomain, stranger.pub).status, "400");
  EXPECT_EQ(zap.rejected(PeerKind::kWorker, RejectReason::kUnknownKey), 3u);
  EXPECT_EQ(zap.rejection_logs(), logs + 1);

  // NULL and PLAIN without --insecure-plaintext; GSSAPI never.
  EXPECT_EQ(req.Ask({"1.0", "8", kClientZapDomain, "10.0.0.9", "", "NULL"}).status, "400");
  EXPECT_EQ(req.Ask({"1.0", "9", kClientZapDomain, "10.0.0.9", "", "PLAIN", "u", "p"}).status, "400");
  EXPECT_EQ(req.Ask({"1.0", "9", kWorkerZapDomain, "10.0.0.9", "", "GSSAPI", "x"}).text, "mechanism");
  EXPECT_EQ(zap.rejected(PeerKind::kClient, RejectReason::kMechanism), 2u);
  EXPECT_EQ(zap.rejected(PeerKind::kWorker, RejectReason::kMechanism), 1u);

  // Not our domain (an unwired socket), and a malformed request: refused, not per endpoint.
  EXPECT_EQ(req.Curve("", client.pub).status, "400");
  EXPECT_EQ(req.Curve("zkfleet", client.pub).status, "400");
  r = req.Ask({"2.0", "10", kClientZapDomain, "10.0.0.9", "", "NULL"});
  EXPECT_EQ(r.status, "500");
  EXPECT_EQ(r.request_id, "10");
  EXPECT_EQ(zap.other_rejections(), 3u);

  EXPECT_EQ(callbacks.size(), 8u);
  EXPECT_EQ(callbacks.front(), std::make_pair(PeerKind::kClient, RejectReason::kWrongEndpoint));
  EXPECT_STREQ(RejectReasonName(RejectReason::kUnknownKey), "unknown_key");
  EXPECT_EQ(EndpointForZapDomain(ZapDomain(PeerKind::kWorker)), PeerKind::kWorker);
  EXPECT_EQ(EndpointForZapDomain("zkfleet"), std::nullopt);
}

TEST(ZapHandler, PlaintextAllowedIsAnonymous) {
  zmq::context_t context;
  ZapOptions options;
  options.allow_plaintext = true;
  ZapHandler zap(context, PeerAllowList(), options);
  ZapRequester req(context, zap);
  ZapReply r = req.Ask({"1.0", "1", kClientZapDomain, "10.0.0.9", "", "NULL"});
  EXPECT_EQ(r.status, "200");
  EXPECT_EQ(r.user_id, "anonymous");
  EXPECT_EQ(r.metadata, Property("Kind", "client") + Property("Role", "admin"));
  r = req.Ask({"1.0", "2", kWorkerZapDomain, "10.0.0.9", "", "NULL"});
  EXPECT_EQ(r.status, "200");
  EXPECT_EQ(r.metadata, Property("Kind", "worker"));
  // CURVE still needs a listed key.
  EXPECT_EQ(req.Curve(kClientZapDomain, NewKeys().pub).status, "400");
}

TEST(ZapHandler, RejectionLogsAreRateLimitedPerKeyAndBounded) {
  zmq::context_t context;
  ZapOptions options;
  options.max_log_entries = 3;
  ZapHandler zap(context, PeerAllowList(), options);
  ZapRequester req(context, zap);
  std::vector<Keys> keys;
  for (int i = 0; i < 5; ++i) keys.push_back(NewKeys());
  for (int round = 0; round < 2; ++round) {
    for (const Keys& k : keys) req.Curve(kClientZapDomain, k.pub);
  }
  EXPECT_EQ(zap.rejected(PeerKind::kClient, RejectReason::kUnknownKey), 10u);
  EXPECT_EQ(zap.rejection_logs(), 4u);  // three keys individually, then one summary line

  ZapOptions every;
  every.log_interval = milliseconds(0);
  zmq::context_t context2;
  ZapHandler zap2(context2, PeerAllowList(), every);
  ZapRequester req2(context2, zap2);
  for (int i = 0; i < 3; ++i) req2.Curve(kClientZapDomain, keys[0].pub);
  EXPECT_EQ(zap2.rejection_logs(), 3u);
}

TEST(ZapHandler, OneHandlerPerContext) {
  zmq::context_t context;
  ZapHandler zap(context, PeerAllowList());
  try {
    ZapHandler second(context, PeerAllowList());
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  }
}

// ---- ZapHandler: real CURVE handshakes ----

struct Received {
  std::string body;
  std::string user_id;
  std::optional<std::string> role;
  std::optional<std::string> kind;
};

class ZapHandlerSocketTest : public ::testing::Test {
 protected:
  ZapHandlerSocketTest() : workers_(context_, zmq::socket_type::router), clients_(context_, zmq::socket_type::router) {}

  // The handler first (its endpoint must exist before any handshake), then
  // a worker and a client ROUTER, as the broker will do.
  void Start(PeerAllowList list, bool curve = true) {
    zap_ = std::make_unique<ZapHandler>(context_, std::move(list));
    for (auto [socket, domain, endpoint] : {std::tuple{&workers_, kWorkerZapDomain, &worker_endpoint_},
                                            std::tuple{&clients_, kClientZapDomain, &client_endpoint_}}) {
      socket->set(zmq::sockopt::linger, 0);
      if (curve) {
        socket->set(zmq::sockopt::curve_server, true);
        socket->set(zmq::sockopt::curve_secretkey, server_.sec);
      }
      socket->set(zmq::sockopt::zap_domain, domain);
      socket->bind("tcp://127.0.0.1:*");
      *endpoint = socket->get(zmq::sockopt::last_endpoint);
    }
  }

  zmq::socket_t Dealer(const std::string& endpoint, const Keys* keys) {
    zmq::socket_t dealer(context_, zmq::socket_type::dealer);
    dealer.set(zmq::sockopt::linger, 0);
    if (keys) {
      dealer.set(zmq::sockopt::curve_serverkey, server_.pub);
      dealer.set(zmq::sockopt::curve_publickey, keys->pub);
      dealer.set(zmq::sockopt::curve_secretkey, keys->sec);
    }
    dealer.connect(endpoint);
    dealer.send(zmq::buffer(std::string_view("hello")), zmq::send_flags::none);
    return dealer;
  }

  // Polls the ZAP socket and both ROUTERs for up to `timeout`, answering ZAP
  // requests; returns the first message a ROUTER receives, or nullopt when
  // `stop` holds or time runs out.
  std::optional<Received> Pump(milliseconds timeout, const std::function<bool()>& stop = {}) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (stop && stop()) return std::nullopt;
      zmq::pollitem_t items[] = {{zap_->socket().handle(), 0, ZMQ_POLLIN, 0},
                                 {workers_.handle(), 0, ZMQ_POLLIN, 0},
                                 {clients_.handle(), 0, ZMQ_POLLIN, 0}};
      zmq::poll(items, 3, milliseconds(10));
      if (items[0].revents & ZMQ_POLLIN) zap_->HandleAll();
      for (int i = 1; i <= 2; ++i) {
        if (!(items[i].revents & ZMQ_POLLIN)) continue;
        zmq::socket_t& router = i == 1 ? workers_ : clients_;
        zmq::message_t routing_id, body;
        (void)router.recv(routing_id);
        EXPECT_TRUE(routing_id.more());
        (void)router.recv(body);
        Received r;
        r.body = body.to_string();
        const char* user = zmq_msg_gets(body.handle(), "User-Id");
        r.user_id = user ? user : "";
        if (const char* role = zmq_msg_gets(body.handle(), "Role")) r.role = role;
        if (const char* kind = zmq_msg_gets(body.handle(), "Kind")) r.kind = kind;
        return r;
      }
    }
    return std::nullopt;
  }

  zmq::context_t context_;
  Keys server_ = NewKeys();
  std::unique_ptr<ZapHandler> zap_;
  zmq::socket_t workers_;
  zmq::socket_t clients_;
  std::string worker_endpoint_;
  std::string client_endpoint_;
};

TEST_F(ZapHandlerSocketTest, AllowedClientsArriveWithNameAndRole) {
  Keys alice = NewKeys(), root = NewKeys();
  Start(PeerAllowList::FromPeers({Peer("alice", PeerKind::kClient, alice),
                              Peer("root", PeerKind::kClient, root, Role::kAdmin)}));
  zmq::socket_t a = Dealer(client_endpoint_, &alice);
  std::optional<Received> got = Pump(milliseconds(1500));
  ASSERT_TRUE(got);
  EXPECT_EQ(got->body, "hello");
  EXPECT_EQ(got->user_id, "alice");
  EXPECT_EQ(got->role, "submit");
  EXPECT_EQ(got->kind, "client");

  zmq::socket_t r = Dealer(client_endpoint_, &root);
  got = Pump(milliseconds(1500));
  ASSERT_TRUE(got);
  EXPECT_EQ(got->user_id, "root");
  EXPECT_EQ(got->role, "admin");
  EXPECT_EQ(zap_->accepted(PeerKind::kClient), 2u);
}

TEST_F(ZapHandlerSocketTest, UnknownKeyIsRefusedAtTheHandshake) {
  Keys alice = NewKeys(), stranger = NewKeys();
  Start(PeerAllowList::FromPeers({Peer("alice", PeerKind::kClient, alice)}));
  zmq::socket_t s = Dealer(client_endpoint_, &stranger);
  auto refused = [&] { return zap_->rejected(PeerKind::kClient, RejectReason::kUnknownKey) > 0; };
  EXPECT_FALSE(Pump(milliseconds(1000), refused));
  ASSERT_TRUE(refused());
  EXPECT_FALSE(Pump(milliseconds(200)));  // and nothing arrives afterwards
  EXPECT_EQ(zap_->accepted(PeerKind::kClient), 0u);
  EXPECT_EQ(zap_->rejection_logs(), 1u);  // however often it retried
}

TEST_F(ZapHandlerSocketTest, WorkerKeyOnlyOnTheWorkerPort) {
  Keys gpu = NewKeys();
  Start(PeerAllowList::FromPeers({Peer("gpu-1", PeerKind::kWorker, gpu)}));
  zmq::socket_t wrong = Dealer(client_endpoint_, &gpu);
  auto refused = [&] { return zap_->rejected(PeerKind::kClient, RejectReason::kWrongEndpoint) > 0; };
  EXPECT_FALSE(Pump(milliseconds(1000), refused));
  ASSERT_TRUE(refused());
  wrong.close();

  zmq::socket_t right = Dealer(worker_endpoint_, &gpu);
  std::optional<Received> got = Pump(milliseconds(1000));
  ASSERT_TRUE(got);
  EXPECT_EQ(got->user_id, "gpu-1");
  EXPECT_EQ(got->kind, "worker");
  EXPECT_EQ(got->role, std::nullopt);
}

TEST_F(ZapHandlerSocketTest, ReloadAdmitsANewKey) {
  Keys bob = NewKeys();
  Start(PeerAllowList());
  {
    zmq::socket_t before = Dealer(client_endpoint_, &bob);
    auto refused = [&] { return zap_->rejected(PeerKind::kClient, RejectReason::kUnknownKey) > 0; };
    EXPECT_FALSE(Pump(milliseconds(1000), refused));
    ASSERT_TRUE(refused());
  }
  zap_->Reload(PeerAllowList::FromPeers({Peer("bob", PeerKind::kClient, bob, Role::kObserve)}));
  zmq::socket_t after = Dealer(client_endpoint_, &bob);
  std::optional<Received> got = Pump(milliseconds(1000));
  ASSERT_TRUE(got);
  EXPECT_EQ(got->user_id, "bob");
  EXPECT_EQ(got->role, "observe");
}

TEST_F(ZapHandlerSocketTest, PlaintextPeerIsRefused) {
  Start(PeerAllowList(), /*curve=*/false);
  zmq::socket_t plain = Dealer(client_endpoint_, nullptr);
  auto refused = [&] { return zap_->rejected(PeerKind::kClient, RejectReason::kMechanism) > 0; };
  EXPECT_FALSE(Pump(milliseconds(1000), refused));
  ASSERT_TRUE(refused());
  EXPECT_FALSE(Pump(milliseconds(200)));
}

}  // namespace
}  // namespace zkfleet::broker
