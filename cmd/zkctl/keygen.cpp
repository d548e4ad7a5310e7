// zkctl keygen --out NAME: a CurveZMQ keypair as NAME.pub and NAME.secret
// (mode 0600), see zkfleet/fleet/curve_keys.hpp for the format. Needs no
// broker. Never overwrites: an existing NAME.pub or NAME.secret is an error.
#include <filesystem>
#include <iostream>
#include <string>
#include <system_error>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "zkfleet/common/error.hpp"
#include "zkfleet/fleet/curve_keys.hpp"

namespace zkctl {

int Keygen(const std::string& out, bool json) {
  namespace fs = std::filesystem;
  const fs::path prefix(out);
  const std::string name = prefix.filename().string();
  if (name.empty() || name == "." || name == "..") {
    throw zkfleet::Error(zkfleet::ErrorCode::kInvalidArgument,
                         "--out '" + out + "' must end in a file name: NAME.pub and NAME.secret are written");
  }
  fs::path dir = prefix.parent_path();
  if (!dir.empty()) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) {
      throw zkfleet::Error(zkfleet::ErrorCode::kIo, "cannot create directory " + dir.string() + ": " + ec.message());
    }
  }
  const zkfleet::fleet::CurveKeyPair keys = zkfleet::fleet::GenerateCurveKeyPair();
  zkfleet::fleet::WriteKeyPair(dir.empty() ? fs::path(".") : dir, name, keys);
  const std::string pub_file = out + ".pub";
  const std::string secret_file = out + ".secret";
  if (json) {
    nlohmann::json j{{"public_key", keys.public_z85}, {"public_file", pub_file}, {"secret_file", secret_file}};
    std::cout << j.dump(2) << '\n';
  } else {
    std::cout << "public key:  " << keys.public_z85 << '\n'
              << "public file: " << pub_file << "  (give it to the broker's allow-list)\n"
              << "secret file: " << secret_file << "  (mode 0600; keep it on this machine)\n";
  }
  return kExitOk;
}

}  // namespace zkctl
