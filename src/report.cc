#include "tracefuse/report.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "tracefuse/strings.h"

namespace tracefuse {

std::string DumpJson(const Json& json, int indent) {
  return json.dump(indent, ' ', false, Json::error_handler_t::replace);
}

namespace {

double Micros(int64_t ns) { return static_cast<double>(ns) / 1000.0; }

std::string Thousands(uint64_t v) {
  std::string digits = StrCat(v);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

std::string HumanBytes(uint64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? StrCat(b, " B") : fmt::format("{:.1f} {}", v, units[u]);
}

}  // namespace

Json StatsJson(const TraceProfile& p, double elapsed) {
  Json j;
  j["trace"] = p.path;
  j["platform"] = std::string(PlatformName(p.platform));
  j["platform_evidence"] = p.platform_evidence;
  j["gpu"] = p.gpu;
  j["bytes"] = p.input_bytes;
  j["file_bytes"] = p.file_bytes;
  j["compressed"] = p.compressed;
  j["events"] = p.events;
  Json cats = Json::object();
  for (const auto& [cat, count] : p.event_categories) cats[cat.empty() ? "(none)" : cat] = count;
  j["events_by_category"] = cats;
  int64_t kernel_ns = 0;
  for (int64_t t : p.name_time_ns) kernel_ns += t;
  j["kernels"] = p.kernels.size();
  j["kernel_time_us"] = Micros(kernel_ns);
  j["distinct_kernel_names"] = p.names.size();
  j["correlation_groups"] = p.group_size.size();
  j["correlation_groups_50_plus"] = p.GroupsAtLeast(50);
  j["kernels_without_correlation"] = p.kernels_without_correlation;
  j["kernels_with_bad_times"] = p.kernels_with_bad_times;
  j["rule_set"] = p.classifier->rule_set().name();
  Json per = Json::array();
  std::vector<CategoryTotals> totals = p.PerCategory();
  for (size_t c = 0; c < totals.size(); ++c) {
    if (totals[c].kernels == 0) continue;
    per.push_back(Json{{"category", p.category_name(static_cast<uint16_t>(c))},
                       {"kernels", totals[c].kernels},
                       {"time_us", Micros(totals[c].time_ns)}});
  }
  j["categories"] = per;
  j["elapsed_seconds"] = elapsed;
  j["gb_per_second"] = elapsed > 0 ? static_cast<double>(p.input_bytes) / 1e9 / elapsed : 0.0;
  return j;
}

std::string StatsText(const TraceProfile& p, double elapsed) {
  Json j = StatsJson(p, elapsed);
  std::string out;
  auto line = [&](std::string_view key, const std::string& value) {
    fmt::format_to(std::back_inserter(out), "{:<26} {}\n", key, value);
  };
  line("trace", p.path);
  line("platform", StrCat(PlatformName(p.platform), " (", p.platform_evidence, ")"));
  line("gpu", p.gpu.empty() ? "(not named)" : p.gpu);
  line("bytes", StrCat(Thousands(p.input_bytes), " (", HumanBytes(p.input_bytes),
                       p.compressed ? StrCat(", ", HumanBytes(p.file_bytes), " gzip") : "", ")"));
  line("events", Thousands(p.events));
  for (const auto& [cat, count] : p.event_categories) {
    line(StrCat("  ", cat.empty() ? "(none)" : cat), Thousands(count));
  }
  line("kernels", Thousands(p.kernels.size()));
  line("kernel time", fmt::format("{:.3f} ms", j["kernel_time_us"].get<double>() / 1000));
  line("distinct kernel names", Thousands(p.names.size()));
  line("correlation groups", StrCat(Thousands(p.group_size.size()), " (",
                                    Thousands(p.GroupsAtLeast(50)), " with >= 50 kernels)"));
  line("kernels w/o correlation", Thousands(p.kernels_without_correlation));
  if (p.kernels_with_bad_times > 0) {
    line("kernels with bad ts/dur", Thousands(p.kernels_with_bad_times));
  }
  line("elapsed", fmt::format("{:.3f} s ({:.2f} GB/s)", elapsed, j["gb_per_second"].get<double>()));
  return out;
}

absl::Status WriteOutput(const std::string& path, std::string_view content) {
  if (path == "-") {
    if (std::fwrite(content.data(), 1, content.size(), stdout) != content.size() ||
        std::fflush(stdout) != 0) {
      return absl::UnavailableError(StrCat("standard output: ", std::strerror(errno)));
    }
    return absl::OkStatus();
  }
  std::string tmp = StrCat(path, ".tmp.", getpid());
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return absl::UnavailableError(StrCat(path, ": ", std::strerror(errno)));
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      close(fd);
      unlink(tmp.c_str());
      return absl::UnavailableError(StrCat(path, ": ", std::strerror(err)));
    }
    done += static_cast<size_t>(n);
  }
  if (fsync(fd) != 0 || close(fd) != 0 || rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    unlink(tmp.c_str());
    return absl::UnavailableError(StrCat(path, ": ", std::strerror(err)));
  }
  return absl::OkStatus();
}

}  // namespace tracefuse
