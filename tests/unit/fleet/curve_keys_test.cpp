// CURVE key files (format, mode 0600, no overwrite, validation) and the
// socket helpers in a real CURVE handshake over TCP.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <zmq.hpp>

#include "testutil/test_support.hpp"
#include "zkfleet/common/error.hpp"
#include "zkfleet/fleet/broker_endpoints.hpp"
#include "zkfleet/fleet/curve_keys.hpp"

namespace zkfleet::fleet {
namespace {

namespace fs = std::filesystem;
using zkfleet::testing::TempDir;

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteText(const fs::path& p, const std::string& text, fs::perms perms) {
  { std::ofstream(p, std::ios::binary) << text; }
  fs::permissions(p, perms);
}

mode_t ModeOf(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::stat(p.c_str(), &st), 0);
  return st.st_mode & 07777;
}

// Runs `fn`, expects a zkfleet::Error with `code` whose message contains every `needles`.
template <typename Fn>
void ExpectError(Fn&& fn, ErrorCode code, std::initializer_list<std::string> needles) {
  try {
    fn();
    ADD_FAILURE() << "no error thrown";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const auto& n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
  }
}

TEST(CurveKeys, GenerateWriteReadRoundTrip) {
  TempDir tmp;
  CurveKeyPair keys = GenerateCurveKeyPair();
  EXPECT_TRUE(IsZ85Key(keys.public_z85));
  EXPECT_TRUE(IsZ85Key(keys.secret_z85));
  EXPECT_NE(keys.public_z85, keys.secret_z85);
  EXPECT_NE(GenerateCurveKeyPair().public_z85, keys.public_z85);

  WriteKeyPair(tmp.path(), "node", keys);
  CurveKeyPair back = ReadSecretKeyFile(tmp.path() / "node.secret");
  EXPECT_EQ(back.public_z85, keys.public_z85);
  EXPECT_EQ(back.secret_z85, keys.secret_z85);
  EXPECT_EQ(ReadPublicKeyFile(tmp.path() / "node.pub"), keys.public_z85);
  // The public file never holds the secret.
  EXPECT_EQ(Slurp(tmp.path() / "node.pub").find(keys.secret_z85), std::string::npos);
}

TEST(CurveKeys, SecretFileIsMode0600) {
  TempDir tmp;
  mode_t old = ::umask(0);  // even a permissive umask must not widen it
  WriteKeyPair(tmp.path(), "k", GenerateCurveKeyPair());
  ::umask(old);
  EXPECT_EQ(ModeOf(tmp.path() / "k.secret"), 0600u);
  EXPECT_EQ(ModeOf(tmp.path() / "k.pub"), 0644u);
}

TEST(CurveKeys, RefusesToOverwriteEitherFile) {
  TempDir tmp;
  CurveKeyPair first = GenerateCurveKeyPair();
  WriteKeyPair(tmp.path(), "k", first);
  const std::string pub_before = Slurp(tmp.path() / "k.pub");
  const std::string sec_before = Slurp(tmp.path() / "k.secret");
  ExpectError([&] { WriteKeyPair(tmp.path(), "k", GenerateCurveKeyPair()); }, ErrorCode::kInvalidArgument,
              {"k.pub", "refusing to overwrite"});
  EXPECT_EQ(Slurp(tmp.path() / "k.pub"), pub_before);
  EXPECT_EQ(Slurp(tmp.path() / "k.secret"), sec_before);

  // Only one of the two present: still refused, and no new file appears.
  fs::remove(tmp.path() / "k.pub");
  ExpectError([&] { WriteKeyPair(tmp.path(), "k", GenerateCurveKeyPair()); }, ErrorCode::kInvalidArgument,
              {"k.secret", "refusing to overwrite"});
  EXPECT_FALSE(fs::exists(tmp.path() / "k.pub"));
  EXPECT_EQ(Slurp(tmp.path() / "k.secret"), sec_before);

  WriteText(tmp.path() / "j.pub", "mine\n", fs::perms::owner_read | fs::perms::owner_write);
  ExpectError([&] { WriteKeyPair(tmp.path(), "j", GenerateCurveKeyPair()); }, ErrorCode::kInvalidArgument,
              {"j.pub"});
  EXPECT_EQ(Slurp(tmp.path() / "j.pub"), "mine\n");
  EXPECT_FALSE(fs::exists(tmp.path() / "j.secret"));
}

TEST(CurveKeys, RejectsBadNames) {
  TempDir tmp;
  CurveKeyPair keys = GenerateCurveKeyPair();
  for (const std::string name : {"", "a/b", "..", "x.pub", "x.secret"}) {
    ExpectError([&] { WriteKeyPair(tmp.path(), name, keys); }, ErrorCode::kInvalidArgument, {});
  }
  EXPECT_TRUE(fs::is_empty(tmp.path()));
}

TEST(CurveKeys, SecretFileReadableByOthersIsRefused) {
  TempDir tmp;
  CurveKeyPair keys = GenerateCurveKeyPair();
  WriteKeyPair(tmp.path(), "k", keys);
  const fs::path sec = tmp.path() / "k.secret";
  fs::permissions(sec, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                           fs::perms::others_read);
  ExpectError([&] { ReadSecretKeyFile(sec); }, ErrorCode::kInvalidArgument, {"0644", "chmod 600 " + sec.string()});
  ExpectError([&] { ReadPublicKeyFile(sec); }, ErrorCode::kInvalidArgument, {"holds a secret key", "NAME.pub"});
  fs::permissions(sec, fs::perms::owner_read | fs::perms::group_read);  // 0440: group alone is refused too
  ExpectError([&] { ReadSecretKeyFile(sec); }, ErrorCode::kInvalidArgument, {"0440", "chmod 600"});
  fs::permissions(sec, fs::perms::owner_read);  // 0400 is fine
  EXPECT_EQ(ReadSecretKeyFile(sec).secret_z85, keys.secret_z85);
}

TEST(CurveKeys, TruncatedOrGarbageKeysAreClearErrors) {
  TempDir tmp;
  CurveKeyPair keys = GenerateCurveKeyPair();
  const auto rw = fs::perms::owner_read | fs::perms::owner_write;

  WriteText(tmp.path() / "short.pub", "public-key = " + keys.public_z85.substr(0, 30) + "\n", rw);
  ExpectError([&] { ReadPublicKeyFile(tmp.path() / "short.pub"); }, ErrorCode::kBadFormat,
              {"short.pub:1", "30 chars", "40"});

  WriteText(tmp.path() / "bad.pub", "# comment\n\npublic-key = " + std::string(39, 'a') + "~\n", rw);
  ExpectError([&] { ReadPublicKeyFile(tmp.path() / "bad.pub"); }, ErrorCode::kBadFormat,
              {"bad.pub:3", "not valid Z85"});

  // Valid characters, but a 5-char group worth more than 2^32.
  // ('%' is digit 82: "%%%%%" is 4,331,409,002 > 2^32 - 1.)
  const std::string overflow = "%%%%%" + keys.public_z85.substr(5);
  EXPECT_FALSE(IsZ85Key(overflow));
  WriteText(tmp.path() / "overflow.pub", "public-key = " + overflow + "\n", rw);
  ExpectError([&] { ReadPublicKeyFile(tmp.path() / "overflow.pub"); }, ErrorCode::kBadFormat,
              {"overflow.pub:1", "not valid Z85"});
  // A bare key line starting with '#' is a comment (the writer never writes bare keys).
  WriteText(tmp.path() / "hash.pub", "#" + keys.public_z85.substr(1) + "\n", rw);
  ExpectError([&] { ReadPublicKeyFile(tmp.path() / "hash.pub"); }, ErrorCode::kBadFormat, {"hash.pub", "no key"});
  EXPECT_FALSE(IsZ85Key(std::string(40, '#')));
  EXPECT_FALSE(IsZ85Key(""));
  EXPECT_FALSE(IsZ85Key(keys.public_z85 + "0"));

  WriteText(tmp.path() / "empty.pub", "# nothing here\n", rw);
  ExpectError([&] { ReadPublicKeyFile(tmp.path() / "empty.pub"); }, ErrorCode::kBadFormat, {"empty.pub", "no key"});

  WriteText(tmp.path() / "typo.pub", "publik-key = " + keys.public_z85 + "\n", rw);
  ExpectError([&] { ReadPublicKeyFile(tmp.path() / "typo.pub"); }, ErrorCode::kBadFormat, {"unknown name", "publik-key"});

  WriteText(tmp.path() / "twice.pub", "public-key = " + keys.public_z85 + "\npublic-key = " + keys.public_z85 + "\n",
            rw);
  ExpectError([&] { ReadPublicKeyFile(tmp.path() / "twice.pub"); }, ErrorCode::kBadFormat, {"twice.pub:2", "second"});

  WriteText(tmp.path() / "nosecret.secret", "public-key = " + keys.public_z85 + "\n", rw);
  ExpectError([&] { ReadSecretKeyFile(tmp.path() / "nosecret.secret"); }, ErrorCode::kInvalidArgument,
              {"nosecret.secret", "holds only a public key"});
  WriteText(tmp.path() / "nothing.secret", "# no key at all\n", rw);
  ExpectError([&] { ReadSecretKeyFile(tmp.path() / "nothing.secret"); }, ErrorCode::kBadFormat,
              {"nothing.secret", "no 'secret-key"});

  WriteText(tmp.path() / "trunc.secret",
            "public-key = " + keys.public_z85 + "\nsecret-key = " + keys.secret_z85.substr(0, 12), rw);
  ExpectError([&] { ReadSecretKeyFile(tmp.path() / "trunc.secret"); }, ErrorCode::kBadFormat,
              {"trunc.secret:2", "secret-key", "12 chars"});

  ExpectError([&] { ReadSecretKeyFile(tmp.path() / "missing.secret"); }, ErrorCode::kNotFound, {"missing.secret"});
  ExpectError([&] { ReadPublicKeyFile(tmp.path() / "missing.pub"); }, ErrorCode::kNotFound, {"missing.pub"});
}

TEST(CurveKeys, BarePublicKeyAndWhitespaceAreAccepted) {
  TempDir tmp;
  CurveKeyPair keys = GenerateCurveKeyPair();
  const auto rw = fs::perms::owner_read | fs::perms::owner_write;
  WriteText(tmp.path() / "bare.pub", "  " + keys.public_z85 + " \r\n", rw);
  EXPECT_EQ(ReadPublicKeyFile(tmp.path() / "bare.pub"), keys.public_z85);
  WriteText(tmp.path() / "tight.secret", "public-key=" + keys.public_z85 + "\n\tsecret-key =" + keys.secret_z85, rw);
  EXPECT_EQ(ReadSecretKeyFile(tmp.path() / "tight.secret").secret_z85, keys.secret_z85);
}

TEST(CurveKeys, SecretWhosePublicDoesNotMatchIsRefused) {
  TempDir tmp;
  CurveKeyPair a = GenerateCurveKeyPair();
  CurveKeyPair b = GenerateCurveKeyPair();
  WriteText(tmp.path() / "mixed.secret", "public-key = " + b.public_z85 + "\nsecret-key = " + a.secret_z85 + "\n",
            fs::perms::owner_read | fs::perms::owner_write);
  ExpectError([&] { ReadSecretKeyFile(tmp.path() / "mixed.secret"); }, ErrorCode::kMismatch,
              {"mixed.secret", "not the public half"});
  ExpectError([&] { ReadPublicKeyFile(tmp.path() / "mixed.secret"); }, ErrorCode::kInvalidArgument,
              {"mixed.secret", "holds a secret key"});
  ExpectError([&] { WriteKeyPair(tmp.path(), "m", CurveKeyPair{b.public_z85, a.secret_z85}); }, ErrorCode::kMismatch,
              {});
  EXPECT_FALSE(fs::exists(tmp.path() / "m.pub"));
}

// The two key mistakes a user makes: each file where the other belongs.
TEST(CurveKeys, EachKeyFileWhereTheOtherBelongsIsRefusedSayingSo) {
  TempDir tmp;
  CurveKeyPair keys = GenerateCurveKeyPair();
  WriteKeyPair(tmp.path(), "k", keys);
  // broker.secret as --broker-public-key: refused, not used for its public half.
  ExpectError([&] { ReadPublicKeyFile(tmp.path() / "k.secret"); }, ErrorCode::kInvalidArgument,
              {"k.secret", "holds a secret key", "NAME.pub"});
  fs::copy_file(tmp.path() / "k.secret", tmp.path() / "renamed.key");
  ExpectError([&] { ReadPublicKeyFile(tmp.path() / "renamed.key"); }, ErrorCode::kInvalidArgument,
              {"holds a secret key"});
  // me.pub (mode 0644) as --curve-secret-key: "holds only a public key", not "chmod 600".
  ExpectError([&] { ReadSecretKeyFile(tmp.path() / "k.pub"); }, ErrorCode::kInvalidArgument,
              {"k.pub", "holds only a public key", "NAME.secret"});
  try {
    ReadSecretKeyFile(tmp.path() / "k.pub");
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find("chmod"), std::string::npos) << e.what();
  }
}

TEST(CurveKeys, SocketHelpersRejectBadKeys) {
  zmq::context_t ctx(1);
  zmq::socket_t s(ctx, zmq::socket_type::dealer);
  CurveKeyPair keys = GenerateCurveKeyPair();
  ExpectError([&] { ConfigureCurveServer(s, CurveKeyPair{keys.public_z85, "short"}); }, ErrorCode::kInvalidArgument,
              {"secret key"});
  ExpectError([&] { ConfigureCurveClient(s, keys, "nope"); }, ErrorCode::kInvalidArgument, {"server's public key"});
}

// A ROUTER with ConfigureCurveServer and a DEALER with ConfigureCurveClient.
// No ZAP handler is bound in the context: libzmq 4.3 then accepts every CURVE
// client that completes the handshake (the ZAP domain is set but not enforced).
// A client with the wrong server key never completes it: nothing is delivered.
TEST(CurveKeys, CurveHandshakeOverTcp) {
  zmq::context_t ctx(1);
  CurveKeyPair server = GenerateCurveKeyPair();
  CurveKeyPair client = GenerateCurveKeyPair();
  CurveKeyPair impostor = GenerateCurveKeyPair();

  zmq::socket_t router(ctx, zmq::socket_type::router);
  router.set(zmq::sockopt::linger, 0);
  router.set(zmq::sockopt::rcvtimeo, 5000);
  ConfigureCurveServer(router, server);
  EXPECT_EQ(router.get(zmq::sockopt::zap_domain), kZapDomain);
  EXPECT_EQ(router.get(zmq::sockopt::curve_server), 1);
  router.bind("tcp://127.0.0.1:*");
  const std::string endpoint = router.get(zmq::sockopt::last_endpoint);

  // Wrong server key first: its HELLO cannot be opened by the server.
  zmq::socket_t wrong(ctx, zmq::socket_type::dealer);
  wrong.set(zmq::sockopt::linger, 0);
  ConfigureCurveClient(wrong, client, impostor.public_z85);
  wrong.connect(endpoint);
  wrong.send(zmq::str_buffer("from-wrong"), zmq::send_flags::dontwait);

  zmq::socket_t good(ctx, zmq::socket_type::dealer);
  good.set(zmq::sockopt::linger, 0);
  good.set(zmq::sockopt::rcvtimeo, 5000);
  ConfigureCurveClient(good, client, server.public_z85);
  good.connect(endpoint);
  good.send(zmq::str_buffer("hello"), zmq::send_flags::none);

  zmq::message_t identity, body;
  ASSERT_TRUE(router.recv(identity));
  ASSERT_TRUE(router.recv(body));
  EXPECT_EQ(body.to_string(), "hello");
  router.send(identity, zmq::send_flags::sndmore);
  router.send(zmq::str_buffer("welcome"), zmq::send_flags::none);
  zmq::message_t reply;
  ASSERT_TRUE(good.recv(reply));
  EXPECT_EQ(reply.to_string(), "welcome");

  // Give the wrong-key client time for several handshake attempts: nothing arrives.
  router.set(zmq::sockopt::rcvtimeo, 500);
  zmq::message_t stray;
  EXPECT_FALSE(router.recv(stray)) << "a client with the wrong server key got through: " << stray.to_string();

  // A plaintext client (no CURVE at all) is refused as well.
  zmq::socket_t plain(ctx, zmq::socket_type::dealer);
  plain.set(zmq::sockopt::linger, 0);
  plain.connect(endpoint);
  plain.send(zmq::str_buffer("from-plain"), zmq::send_flags::dontwait);
  EXPECT_FALSE(router.recv(stray)) << "a plaintext client got through: " << stray.to_string();
}

// --broker lists (brokers on etcd): parsed with blanks around commas, bad
// entries named; --broker-public-key: one key for all, or one per endpoint.
TEST(BrokerEndpoints, ListsParseAndBadOnesAreNamed) {
  EXPECT_EQ(ParseBrokerEndpoints("tcp://a:1"), std::vector<std::string>{"tcp://a:1"});
  EXPECT_EQ(ParseBrokerEndpoints(" tcp://a:1 , tcp://b:2"), (std::vector<std::string>{"tcp://a:1", "tcp://b:2"}));
  EXPECT_EQ(DescribeBrokerEndpoints({"tcp://a:1", "tcp://b:2"}), "any of tcp://a:1, tcp://b:2");
  std::string many;
  for (int i = 0; i < 17; ++i) many += (i ? "," : "") + std::string("tcp://h:") + std::to_string(i);
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"", "is empty"},          {"tcp://a:1,", "entry 2 is empty"},  {"tcp://a:1,,tcp://b:2", "entry 2 is empty"},
      {"a:1", "TRANSPORT://ADDRESS"}, {"tcp://", "TRANSPORT://ADDRESS"}, {"tcp://a:1,tcp://a:1", "given twice"},
      {many, "more than 16"}};
  for (const auto& c : bad) {  // (clang before 16 cannot capture a structured binding)
    ExpectError([&] { ParseBrokerEndpoints(c.first); }, ErrorCode::kInvalidArgument, {"--broker", c.second});
  }
}

TEST(BrokerEndpoints, OneBrokerKeyForAllOrOnePerEndpoint) {
  TempDir tmp;
  WriteKeyPair(tmp.path(), "me", GenerateCurveKeyPair());
  const CurveKeyPair b1 = GenerateCurveKeyPair(), b2 = GenerateCurveKeyPair();
  WriteKeyPair(tmp.path(), "b1", b1);
  WriteKeyPair(tmp.path(), "b2", b2);
  const std::string me = (tmp.path() / "me.secret").string();
  const std::string k1 = (tmp.path() / "b1.pub").string(), k2 = (tmp.path() / "b2.pub").string();
  ClientSecurity one = ClientSecurity::Load(false, me, k1);
  one.CheckFits(1);
  one.CheckFits(3);
  ClientSecurity two = ClientSecurity::Load(false, me, k1 + "," + k2);
  EXPECT_EQ(two.broker_public_z85, (std::vector<std::string>{b1.public_z85, b2.public_z85}));
  two.CheckFits(2);
  ExpectError([&] { two.CheckFits(3); }, ErrorCode::kInvalidArgument, {"names 2 keys for 3 broker endpoints"});
  ExpectError([&] { ClientSecurity::Load(false, me, k1 + ","); }, ErrorCode::kInvalidArgument, {"an empty entry"});
  // Each connect() takes its endpoint's key.
  zmq::context_t context;
  zmq::socket_t socket(context, zmq::socket_type::dealer);
  two.Apply(socket, 1);
  EXPECT_EQ(socket.get(zmq::sockopt::curve_serverkey, 41), b2.public_z85);
  two.Apply(socket, 0);
  EXPECT_EQ(socket.get(zmq::sockopt::curve_serverkey, 41), b1.public_z85);
  ExpectError([&] { two.Apply(socket, 2); }, ErrorCode::kInvalidArgument, {"names 2 keys for 3"});
}

}  // namespace
}  // namespace zkfleet::fleet
