// docs/metrics.md is the list of zkfleet's metrics. This test checks it
// against what the code exports, both ways: every documented metric exists
// with the documented type, label names and process, and nothing undocumented
// is exported (from the registry and over HTTP).
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "unit/metrics/http_client.hpp"
#include "zkfleet/metrics/broker_metrics.hpp"
#include "zkfleet/metrics/worker_metrics.hpp"

namespace zkfleet::metrics {
namespace {

struct Documented {
  std::string type;
  std::set<std::string> labels;
  std::set<std::string> exported_by;  // "broker", "worker"
};

// Names in backticks in a table cell: "`circuit`, `priority`" -> {circuit, priority}.
std::set<std::string> BacktickedWords(const std::string& cell) {
  std::set<std::string> words;
  static const std::regex word("`([a-z_]+)`");
  for (auto it = std::sregex_iterator(cell.begin(), cell.end(), word); it != std::sregex_iterator(); ++it) {
    words.insert((*it)[1]);
  }
  return words;
}

std::set<std::string> CommaWords(const std::string& cell) {
  std::set<std::string> words;
  static const std::regex word("[a-z]+");
  for (auto it = std::sregex_iterator(cell.begin(), cell.end(), word); it != std::sregex_iterator(); ++it) {
    words.insert(it->str());
  }
  return words;
}

// Rows "| `zkfleet_x` | type | labels | exported by | meaning |" of docs/metrics.md.
std::map<std::string, Documented> ReadDocumentedMetrics() {
  std::ifstream file(std::string(ZKFLEET_SOURCE_DIR) + "/docs/metrics.md");
  EXPECT_TRUE(file) << "cannot read docs/metrics.md";
  std::map<std::string, Documented> metrics;
  static const std::regex row(R"(^\|\s*`((?:zkfleet|exposer)_[a-z0-9_]+)`\s*\|([^|]*)\|([^|]*)\|([^|]*)\|.*$)");
  std::string line;
  while (std::getline(file, line)) {
    std::smatch m;
    if (!std::regex_match(line, m, row)) continue;
    Documented doc;
    doc.type = *CommaWords(m[2]).begin();
    doc.labels = BacktickedWords(m[3]);
    doc.exported_by = CommaWords(m[4]);
    EXPECT_TRUE(metrics.emplace(m[1], doc).second) << "documented twice: " << m[1];
  }
  return metrics;
}

std::string TypeName(prometheus::MetricType type) {
  switch (type) {
    case prometheus::MetricType::Counter: return "counter";
    case prometheus::MetricType::Gauge: return "gauge";
    case prometheus::MetricType::Histogram: return "histogram";
    case prometheus::MetricType::Summary: return "summary";
    default: return "untyped";
  }
}

struct Exported {
  std::string type;
  std::set<std::string> labels;
};

std::map<std::string, Exported> ExportedBy(const MetricsServer& server) {
  std::map<std::string, Exported> out;
  for (const auto& family : server.Collect()) {
    Exported& e = out[family.name];
    e.type = TypeName(family.type);
    for (const auto& metric : family.metric) {
      for (const auto& label : metric.label) e.labels.insert(label.name);
    }
  }
  return out;
}

// Family names and types in the text exposition ("# TYPE name type").
std::map<std::string, std::string> ScrapedTypes(int port) {
  auto reply = testing::HttpGet(port, "/metrics");
  EXPECT_EQ(reply.status, 200) << reply.error;
  std::map<std::string, std::string> types;
  std::istringstream lines(reply.body);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string hash, keyword, name, type;
    words >> hash >> keyword >> name >> type;
    if (hash == "#" && keyword == "TYPE") types[name] = type;
  }
  return types;
}

class CatalogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    documented_ = ReadDocumentedMetrics();
    ASSERT_GE(documented_.size(), 20u) << "docs/metrics.md table not found or too short";
  }

  // Compares what `server` exports with the rows documented for `process`.
  void ExpectMatchesDocs(const MetricsServer& server, const std::string& process) {
    auto exported = ExportedBy(server);
    std::map<std::string, std::string> served;  // name -> type
    for (const auto& [name, doc] : documented_) {
      if (doc.exported_by.count(process)) served[name] = doc.type;
      // prometheus-cpp's own exposer_* families come from the HTTP server,
      // not the registry: only the scrape below sees them.
      if (name.rfind("exposer_", 0) == 0) continue;
      bool expected = doc.exported_by.count(process) > 0;
      auto it = exported.find(name);
      if (!expected) {
        EXPECT_TRUE(it == exported.end()) << process << " exports " << name << ", docs say only "
                                          << *doc.exported_by.begin();
        continue;
      }
      ASSERT_TRUE(it != exported.end()) << process << " does not export documented " << name;
      EXPECT_EQ(it->second.type, doc.type) << name;
      EXPECT_EQ(it->second.labels, doc.labels) << name << ": label names differ from docs/metrics.md";
    }
    for (const auto& [name, e] : exported) {
      EXPECT_TRUE(documented_.count(name)) << process << " exports " << name << ", missing from docs/metrics.md";
      EXPECT_EQ(name.rfind("zkfleet_", 0), 0u) << name;
      if (e.type == "counter") EXPECT_TRUE(name.ends_with("_total")) << name;
    }
    EXPECT_EQ(ScrapedTypes(server.port()), served) << "/metrics serves other names or types than docs/metrics.md lists";
  }

  std::map<std::string, Documented> documented_;
};

TEST_F(CatalogTest, BrokerExportsExactlyTheDocumentedBrokerMetrics) {
  MetricsServer server;
  BrokerMetrics metrics(server);
  metrics.ForCircuit("mul");  // per-circuit families exist once a circuit does
  server.Listen("127.0.0.1:0");
  ExpectMatchesDocs(server, "broker");
}

TEST_F(CatalogTest, WorkerExportsExactlyTheDocumentedWorkerMetrics) {
  MetricsServer server;
  WorkerMetrics metrics(server, {"w", "cpu", "none"}, {"mul"}, 60);
  server.Listen("127.0.0.1:0");
  ExpectMatchesDocs(server, "worker");
}

TEST_F(CatalogTest, EveryDocumentedMetricHasAProcessAndAType) {
  for (const auto& [name, doc] : documented_) {
    EXPECT_FALSE(doc.exported_by.empty()) << name;
    for (const auto& process : doc.exported_by) EXPECT_TRUE(process == "broker" || process == "worker") << name;
    if (name.rfind("zkfleet_", 0) == 0) {
      EXPECT_TRUE(doc.type == "counter" || doc.type == "gauge" || doc.type == "histogram") << name;
    }
  }
}

}  // namespace
}  // namespace zkfleet::metrics
