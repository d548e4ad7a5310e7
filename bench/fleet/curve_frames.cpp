// curve_frames: what one 134 MB witness costs to move over CurveZMQ as one
// frame against the same bytes cut into chunks (the reason witnesses travel
// in 4 MiB frames, fleet/frames.hpp). A PUSH and a PULL socket in one
// process, TCP over loopback, one I/O thread: the figure is encrypt + decrypt
// (plus libzmq's copies) per witness.
//
//   curve_frames [--bytes 140509184] [--chunk-mib 0,2,4,8] [--reps 6] [--plaintext]
//
// --chunk-mib 0 = the witness as one frame. Prints one line per chunk size.
#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <zmq.hpp>

namespace {

using Clock = std::chrono::steady_clock;

double MillisecondsPerWitness(size_t bytes, size_t chunk, int reps, bool curve, int port) {
  zmq::context_t context(1);
  zmq::socket_t server(context, zmq::socket_type::pull);
  zmq::socket_t client(context, zmq::socket_type::push);
  if (curve) {
    char server_public[41], server_secret[41], client_public[41], client_secret[41];
    zmq_curve_keypair(server_public, server_secret);
    zmq_curve_keypair(client_public, client_secret);
    server.set(zmq::sockopt::curve_server, 1);
    server.set(zmq::sockopt::curve_secretkey, std::string(server_secret));
    client.set(zmq::sockopt::curve_serverkey, std::string(server_public));
    client.set(zmq::sockopt::curve_publickey, std::string(client_public));
    client.set(zmq::sockopt::curve_secretkey, std::string(client_secret));
  }
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(port);
  server.bind(endpoint);
  client.connect(endpoint);
  const std::string witness(bytes, 'w');
  if (chunk == 0) chunk = bytes;
  std::thread sender([&] {
    for (int r = 0; r < reps; ++r) {
      for (size_t offset = 0; offset < bytes; offset += chunk) {
        const size_t length = std::min(chunk, bytes - offset);
        client.send(zmq::buffer(witness.data() + offset, length),
                    offset + length < bytes ? zmq::send_flags::sndmore : zmq::send_flags::none);
      }
    }
  });
  Clock::time_point first_done;
  for (int r = 0; r < reps; ++r) {
    zmq::message_t part;
    do {
      (void)server.recv(part);
    } while (part.more());
    if (r == 0) first_done = Clock::now();  // the first one warms up the connection
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - first_done).count();
  sender.join();
  return seconds * 1000 / (reps - 1);
}

}  // namespace

int main(int argc, char** argv) {
  size_t bytes = 134ull << 20;
  std::string chunks = "0,2,4,8";
  int reps = 6;
  bool plaintext = false;
  CLI::App app{"curve_frames: CurveZMQ cost of a large witness, one frame against chunks"};
  app.add_option("--bytes", bytes, "witness size")->capture_default_str();
  app.add_option("--chunk-mib", chunks, "chunk sizes to try, MiB, comma-separated (0 = one frame)")
      ->capture_default_str();
  app.add_option("--reps", reps, "witnesses sent per size (the first is a warm-up)")->capture_default_str();
  app.add_flag("--plaintext", plaintext, "without CURVE, for reference");
  CLI11_PARSE(app, argc, argv);
  int port = 29990;
  std::stringstream list(chunks);
  for (std::string item; std::getline(list, item, ',');) {
    const size_t chunk = std::stoull(item) << 20;
    std::printf("bytes=%zu chunk_mib=%s curve=%d ms_per_witness=%.1f\n", bytes, item.c_str(), plaintext ? 0 : 1,
                MillisecondsPerWitness(bytes, chunk, std::max(reps, 2), !plaintext, port++));
  }
  return 0;
}
