#include "bench_input.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "simdjson.h"
#include "tracefuse/parse/chunk_parser.h"
#include "tracefuse/pipeline/flow_graph.h"

namespace tracefuse::bench {

const std::string& GeneratedTrace(const std::string& platform, const std::string& layout,
                                  size_t bytes) {
  static std::map<std::string, std::string> cache;
  std::string key = platform + "/" + layout + "/" + std::to_string(bytes);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  std::string path = "/tmp/tracefuse-bench-" + std::to_string(getpid()) + ".json";
  std::string cmd = std::string(TRACEFUSE_GEN) + " --platform " + platform + " --layout " + layout +
                    " --size " + std::to_string(bytes) + " -o " + path;
  if (std::system(cmd.c_str()) != 0) {
    std::fprintf(stderr, "bench: cannot run %s\n", cmd.c_str());
    std::exit(1);
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  std::remove(path.c_str());
  return cache[key] = s.str();
}

Block WholeBlock(const std::string& text) {
  return Block{text.data(), text.size(), 0, std::shared_ptr<const void>(&text, [](const void*) {})};
}

std::vector<EventChunk> Chunks(const std::string& text, size_t chunk_bytes) {
  SplitterOptions o;
  o.chunk_bytes = chunk_bytes;
  EventSplitter splitter("bench", o);
  std::vector<EventChunk> chunks;
  if (!splitter.Feed(WholeBlock(text), &chunks).ok() || !splitter.Finish().ok()) std::exit(1);
  return chunks;
}

std::vector<std::string> KernelNames() {
  std::set<std::string> distinct;
  std::ifstream in(std::string(TRACEFUSE_SHARED_DIR) + "/golden/classify/kernel_names.jsonl");
  if (in) {
    simdjson::dom::parser parser;
    std::string line;
    while (std::getline(in, line)) {
      simdjson::dom::element row;
      if (parser.parse(simdjson::padded_string(line)).get(row)) continue;
      std::string_view name;
      if (row["name"].get_string().get(name) == simdjson::SUCCESS) distinct.emplace(name);
    }
    // And every name of the real traces, read through the pipeline.
    std::vector<std::string> traces;
    for (const auto& e :
         std::filesystem::directory_iterator(std::string(TRACEFUSE_SHARED_DIR) + "/traces/real")) {
      std::string p = e.path().string();
      if (p.find("rocprof") == std::string::npos && p.size() > 8 &&
          p.substr(p.size() - 8) == ".json.gz")
        traces.push_back(p);
    }
    auto profiles = ProfileTraces(traces, *Classifier::Create(*RuleSet::Load("wafer-kernel")), {});
    if (profiles.ok())
      for (const TraceProfile& t : *profiles) distinct.insert(t.names.begin(), t.names.end());
    if (!distinct.empty()) return std::vector<std::string>(distinct.begin(), distinct.end());
  }
  ChunkParser parser;
  ParsedChunk parsed;
  for (const char* platform : {"amd", "nvidia"}) {
    for (const EventChunk& c : Chunks(GeneratedTrace(platform, "lines", 4 << 20), 1 << 20)) {
      if (!parser.Parse(c, "bench", &parsed).ok()) std::exit(1);
      for (size_t i = 0; i < parsed.name_count(); ++i) distinct.emplace(parsed.name(i));
    }
  }
  return std::vector<std::string>(distinct.begin(), distinct.end());
}

}  // namespace tracefuse::bench
