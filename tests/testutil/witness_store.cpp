#include "testutil/witness_store.hpp"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "testutil/test_support.hpp"
#include "unit/metrics/http_client.hpp"

namespace zkfleet::testing {

namespace {

std::string Nginx() {
  const char* override_path = std::getenv("ZKFLEET_TEST_NGINX");
  return override_path && *override_path ? override_path : "/usr/sbin/nginx";
}

bool Write(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  return static_cast<bool>(out);
}

}  // namespace

WitnessStore::WitnessStore(const std::string& dir) : dir_(dir) {
  namespace fs = std::filesystem;
  fs::create_directories(dir_ + "/www/slow");
  fs::create_directories(dir_ + "/tmp");
  if (!fs::exists(Nginx())) {
    error_ = "nginx not found at " + Nginx() + " (scripts/install-deps.sh installs nginx-light)";
    return;
  }
  // A test CA and a server certificate for 127.0.0.1 (EC keys: quick to make).
  const std::string ec = "ec";
  std::string output;
  auto run = [&](const std::vector<std::string>& argv) {
    if (RunProcess(argv, &output) != 0) {
      error_ = "openssl failed (" + argv[1] + "): " + output;
      return false;
    }
    return true;
  };
  Write(dir_ + "/san.cnf", "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
  if (!run({"openssl", "req", "-x509", "-newkey", ec, "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
            dir_ + "/ca.key", "-out", dir_ + "/ca.pem", "-days", "2", "-subj", "/CN=zkfleet test CA"}) ||
      !run({"openssl", "req", "-newkey", ec, "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
            dir_ + "/server.key", "-out", dir_ + "/server.csr", "-subj", "/CN=127.0.0.1"}) ||
      !run({"openssl", "x509", "-req", "-in", dir_ + "/server.csr", "-CA", dir_ + "/ca.pem", "-CAkey",
            dir_ + "/ca.key", "-CAcreateserial", "-out", dir_ + "/server.pem", "-days", "2", "-extfile",
            dir_ + "/san.cnf"})) {
    return;
  }
  http_port_ = FreePort();
  https_port_ = FreePort();
  const std::string tmp = dir_ + "/tmp";
  std::string conf;
  if (geteuid() == 0) conf += "user root root;\n";  // workers read the test's files
  conf += "worker_processes 2;\npid " + dir_ + "/nginx.pid;\nerror_log " + dir_ + "/error.log warn;\n" +
          "events { worker_connections 512; }\n"
          "http {\n  access_log off;\n  default_type application/octet-stream;\n  sendfile on;\n"
          "  client_body_temp_path " + tmp + "; proxy_temp_path " + tmp + "; fastcgi_temp_path " + tmp +
          "; uwsgi_temp_path " + tmp + "; scgi_temp_path " + tmp + ";\n"
          "  server {\n    listen 127.0.0.1:" + std::to_string(http_port_) + ";\n    listen 127.0.0.1:" +
          std::to_string(https_port_) + " ssl;\n    ssl_certificate " + dir_ + "/server.pem;\n    ssl_certificate_key " +
          dir_ + "/server.key;\n    root " + dir_ + "/www;\n"
          "    location /error/ { return 500; }\n"
          "    location /away/ { return 302 http://169.254.169.254/latest/meta-data/; }\n"
          "    location /slow/ { limit_rate 256k; }\n  }\n}\n";
  Write(dir_ + "/nginx.conf", conf);
  nginx_ = std::make_unique<ChildProcess>(
      std::vector<std::string>{Nginx(), "-p", dir_, "-c", dir_ + "/nginx.conf", "-g", "daemon off;"},
      dir_ + "/nginx.log");
  Put("ready", "ok");
  const auto deadline = std::chrono::steady_clock::now() + Scaled(std::chrono::seconds(10));
  while (std::chrono::steady_clock::now() < deadline) {
    if (HttpGet(http_port_, "/ready", std::chrono::seconds(1)).status == 200) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  error_ = "nginx did not answer on port " + std::to_string(http_port_) + ": " + Log();
}

WitnessStore::~WitnessStore() = default;

void WitnessStore::Put(const std::string& name, const std::string& bytes) const {
  const std::filesystem::path path = root() + "/" + name;
  std::filesystem::create_directories(path.parent_path());
  Write(path.string(), bytes);
}

std::string WitnessStore::Log() const {
  return (nginx_ ? nginx_->Log() : std::string()) + ReadFile(dir_ + "/error.log");
}

}  // namespace zkfleet::testing
