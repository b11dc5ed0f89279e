// The GPU peak table: the built-in rows against their datasheets, FindGpu() on the device names
// traces carry, and the errors of ParseGpuSpecs() and LoadGpuSpecs().
#include "tracefuse/analyze/gpu_spec.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "test_util.h"

namespace tracefuse {
namespace {

constexpr std::nullopt_t kNull = std::nullopt;

// Datasheet is one row of the built-in table as its source prints it: dense TFLOP/s (TOPS for
// int8), sparse figures halved, and TB/s. Written out here, independently of data/gpus.yaml.
struct Datasheet {
  const char* name;
  std::optional<double> fp64, fp32, tf32, bf16, fp16, fp8, int8, hbm_tb_per_s;
};

// In data/gpus.yaml's order (FindGpu() takes the first row that matches).
const Datasheet kDatasheets[] = {
    // NVIDIA Tesla V100 datasheet, V100 for NVLink (SXM2): FP64 7.8 (vector), FP32 15.7, tensor
    // 125; 900 GB/s. No TF32, BF16, FP8 or INT8 figure.
    {"V100 SXM2 (DGX Station)", 7.8, 15.7, kNull, kNull, 125, kNull, kNull, 0.9},
    // NVIDIA A100 datasheet (r4): FP64 tensor 19.5, FP32 19.5, TF32 312*, BF16/FP16 624*, INT8
    // 1,248*; no FP8. 1,555 / 2,039 / 1,555 / 1,935 GB/s.
    {"A100 SXM4 40GB", 19.5, 19.5, 156, 312, 312, kNull, 624, 1.555},
    {"A100 SXM4 80GB", 19.5, 19.5, 156, 312, 312, kNull, 624, 2.039},
    {"A100 PCIe 40GB", 19.5, 19.5, 156, 312, 312, kNull, 624, 1.555},
    {"A100 PCIe 80GB", 19.5, 19.5, 156, 312, 312, kNull, 624, 1.935},
    // NVIDIA H100 datasheet, H100 NVL (per GPU): TF32 835*, BF16/FP16 1,671*, FP8/INT8 3,341*;
    // 3.9 TB/s. FP64 and FP32 unconfirmed.
    {"H100 NVL", kNull, kNull, 417.5, 835.5, 835.5, 1670.5, 1670.5, 3.9},
    // NVIDIA H100 datasheet and Hopper whitepaper, SXM5: FP64 tensor 67, FP32 67, TF32 494.7,
    // BF16/FP16 989.4, FP8/INT8 1978.9; 3.35 TB/s.
    {"H100 SXM", 67, 67, 494.7, 989.4, 989.4, 1978.9, 1978.9, 3.35},
    // NVIDIA H100 datasheet, PCIe: FP64 tensor 51, FP32 51, TF32 756*, BF16/FP16 1,513*,
    // FP8/INT8 3,026*; 2 TB/s.
    {"H100 PCIe", 51, 51, 378, 756, 756, 1513, 1513, 2.0},
    // NVIDIA H200 datasheet, H200 NVL: the H100 NVL's compute, 4.8 TB/s.
    {"H200 NVL", kNull, kNull, 417.5, 835.5, 835.5, 1670.5, 1670.5, 4.8},
    // NVIDIA H200 datasheet, H200 SXM: the H100 SXM5's compute, 4.8 TB/s.
    {"H200", 67, 67, 494.7, 989.4, 989.4, 1978.9, 1978.9, 4.8},
    // NVIDIA Blackwell datasheet, HGX B200: FP64/FP64 tensor 37, FP32 75, TF32 2.2 PF*,
    // FP16/BF16 4.5 PF*, FP8 9 PF*, INT8 9 POPS*; 7.7 TB/s.
    {"B200", 37, 75, 1100, 2250, 2250, 4500, 4500, 7.7},
    // Blackwell Technical Brief, HGX B300 per GPU, as quoted by datacrunch-research/blogs
    // (secondary): FP64 1.25, FP32 75, TF32 2.2 PF*, BF16 4.5 PF*, FP8 9 PF*, 7.7 TB/s; INT8 null.
    {"B300", 1.25, 75, 1100, 2250, 2250, 4500, kNull, 7.7},
    // NVIDIA L40S datasheet: FP32 91.6, TF32 366*, BF16/FP16 733*, FP8 1,466*, INT8 1,466*;
    // 864 GB/s. No FP64 figure.
    {"L40S", kNull, 91.6, 183, 362.05, 362.05, 733, 733, 0.864},
    // NVIDIA Ada whitepaper, GeForce RTX 4090, FP32 accumulate: FP32 82.6, TF32 82.6, BF16/FP16
    // 165.2, FP8 330.3, INT8 660.6; 1,008 GB/s.
    {"GeForce RTX 4090", kNull, 82.6, 82.6, 165.2, 165.2, 330.3, 660.6, 1.008},
    // AMD MI250X specifications, halved per GCD: FP64/FP32 matrix 95.7, FP16/BF16 383, INT8 383;
    // 3.2768 TB/s. No XF32, no FP8.
    {"MI250X (one GCD)", 47.85, 47.85, kNull, 191.5, 191.5, kNull, 191.5, 1.6384},
    // ROCm docs, "Peak-performance capabilities of the MI300X"; 5.3 TB/s.
    {"MI300X", 163.4, 163.4, 653.7, 1307.4, 1307.4, 2614.9, 2614.9, 5.3},
    // AMD MI325X specifications: the MI300X's compute, 6 TB/s.
    {"MI325X", 163.4, 163.4, 653.7, 1307.4, 1307.4, 2614.9, 2614.9, 6.0},
    // AMD MI355X specifications: FP32 157.3, FP16/BF16 2.5 PF, FP8/INT8 5.0 P; 8 TB/s. No XF32;
    // FP64 78.6 as AMD's TraceLens quotes the page (secondary).
    {"MI355X", 78.6, 157.3, kNull, 2516.6, 2516.6, 5033.2, 5033.2, 8.0},
};

TEST(BuiltinGpuSpecs, EveryRowHasItsDatasheetFigures) {
  const GpuSpecs& specs = BuiltinGpuSpecs();
  ASSERT_EQ(specs.gpus.size(), std::size(kDatasheets));
  for (size_t i = 0; i < specs.gpus.size(); ++i) {
    const GpuPeak& gpu = specs.gpus[i];
    const Datasheet& sheet = kDatasheets[i];
    SCOPED_TRACE(gpu.name);
    EXPECT_EQ(gpu.name, sheet.name);
    EXPECT_FALSE(gpu.match.empty());
    EXPECT_FALSE(gpu.source.empty());
    EXPECT_EQ(gpu.Tflops(DType::kUnknown), kNull);
    EXPECT_EQ(gpu.Tflops(DType::kFp64), sheet.fp64);
    EXPECT_EQ(gpu.Tflops(DType::kFp32), sheet.fp32);
    EXPECT_EQ(gpu.Tflops(DType::kTf32), sheet.tf32);
    EXPECT_EQ(gpu.Tflops(DType::kBf16), sheet.bf16);
    EXPECT_EQ(gpu.Tflops(DType::kFp16), sheet.fp16);
    EXPECT_EQ(gpu.Tflops(DType::kFp8), sheet.fp8);
    EXPECT_EQ(gpu.Tflops(DType::kInt8), sheet.int8);
    EXPECT_EQ(gpu.hbm_tb_per_s, sheet.hbm_tb_per_s);
  }
}

TEST(BuiltinGpuSpecs, IsParsedOnce) { EXPECT_EQ(&BuiltinGpuSpecs(), &BuiltinGpuSpecs()); }

// Row names expected for device names: those of the real traces' deviceProperties
// (../shared/traces/real/*.json.gz) first, then those the CUDA and HIP runtimes report for the
// other GPUs of the table.
TEST(FindGpu, MatchesTheDeviceNamesTracesCarry) {
  const struct {
    const char* device_name;
    const char* row;  // nullptr: not in the table
  } kCases[] = {
      {"AMD Radeon Graphics", nullptr},  // an MI250 GCD under ROCm 6.2 (104 CUs): no marketing name
      {"NVIDIA A100-PG509-200", "A100 SXM4 40GB"},
      {"Tesla V100-DGXS-32GB", "V100 SXM2 (DGX Station)"},
      {"NVIDIA B200", "B200"},
      {"NVIDIA H100 80GB HBM3", "H100 SXM"},
      {"AMD Instinct MI300X VF", "MI300X"},
      {"AMD Instinct MI300X", "MI300X"},
      {"NVIDIA A100-SXM4-40GB", "A100 SXM4 40GB"},
      {"NVIDIA A100-SXM4-80GB", "A100 SXM4 80GB"},
      {"NVIDIA A100-PCIE-40GB", "A100 PCIe 40GB"},
      {"NVIDIA A100 80GB PCIe", "A100 PCIe 80GB"},
      {"NVIDIA H100 PCIe", "H100 PCIe"},
      {"NVIDIA H100 NVL", "H100 NVL"},
      {"NVIDIA H200", "H200"},
      {"NVIDIA H200 NVL", "H200 NVL"},
      {"NVIDIA B300 SXM6 AC", "B300"},
      {"NVIDIA L40S", "L40S"},
      {"NVIDIA GeForce RTX 4090", "GeForce RTX 4090"},
      {"AMD Instinct MI250X/MI250", "MI250X (one GCD)"},
      {"AMD Instinct MI325X", "MI325X"},
      {"AMD Instinct MI355X", "MI355X"},
      {"Tesla V100-SXM2-32GB", "V100 SXM2 (DGX Station)"},
      // Not in the table, and not to be taken for a row whose name they contain.
      {"NVIDIA GB200", nullptr},
      {"NVIDIA GH200 480GB", nullptr},
      {"AMD Instinct MI210", nullptr},
      {"AMD Instinct MI300A", nullptr},
      {"", nullptr},
      {" VF", nullptr},
  };
  for (const auto& c : kCases) {
    const GpuPeak* gpu = FindGpu(BuiltinGpuSpecs(), c.device_name);
    EXPECT_EQ(gpu ? gpu->name : "(none)", c.row ? c.row : "(none)") << c.device_name;
  }
}

absl::StatusOr<GpuSpecs> Parse(const std::string& yaml) { return ParseGpuSpecs(yaml, "t.yaml"); }

TEST(FindGpu, IgnoresCaseAndAVirtualFunctionSuffixOnly) {
  absl::StatusOr<GpuSpecs> specs = Parse(
      "gpus:\n"
      "  - {name: VF part, match: [\"x vf\"], source: s}\n"
      "  - {name: X, match: [x], source: s}\n");
  ASSERT_TRUE(specs.ok()) << specs.status();
  EXPECT_EQ(FindGpu(*specs, "GPU X VF")->name, "X");  // " VF" is not part of the name matched
  EXPECT_EQ(FindGpu(*specs, "GPU X VF2")->name, "VF part");
  EXPECT_EQ(FindGpu(*specs, "gpu x"), &specs->gpus[1]);
  EXPECT_EQ(FindGpu(*specs, "GPU Y"), nullptr);
}

TEST(ParseGpuSpecs, ReadsNullAndMissingFiguresAsNone) {
  absl::StatusOr<GpuSpecs> specs = Parse(
      "gpus:\n"
      "  - name: G\n"
      "    match: [g, \"g 2\"]\n"
      "    source: datasheet\n"
      "    tflops: {fp64: null, bf16: 1.5, int8: 3}\n"
      "  - name: H\n"
      "    match: [h]\n"
      "    source: datasheet\n"
      "    hbm_tb_per_s: ~\n");
  ASSERT_TRUE(specs.ok()) << specs.status();
  ASSERT_EQ(specs->gpus.size(), 2u);
  const GpuPeak& g = specs->gpus[0];
  EXPECT_EQ(g.match, (std::vector<std::string>{"g", "g 2"}));
  EXPECT_EQ(g.source, "datasheet");
  EXPECT_EQ(g.Tflops(DType::kFp64), kNull);
  EXPECT_EQ(g.Tflops(DType::kFp32), kNull);
  EXPECT_EQ(g.Tflops(DType::kBf16), 1.5);
  EXPECT_EQ(g.Tflops(DType::kInt8), 3);
  EXPECT_EQ(g.hbm_tb_per_s, kNull);
  for (size_t type = 0; type < kDTypes; ++type) EXPECT_EQ(specs->gpus[1].tflops[type], kNull);
  EXPECT_EQ(specs->gpus[1].hbm_tb_per_s, kNull);
  EXPECT_TRUE(Parse("gpus: []\n").ok());
}

// A row whose figures are fine, for the malformed tables to differ from in one place.
constexpr char kRow[] = "  - {name: G, match: [g], source: s, tflops: {bf16: 1}}\n";

TEST(ParseGpuSpecs, ErrorsNameTheFileTheRowAndWhatIsWrong) {
  const struct {
    std::string yaml;
    std::string error;
  } kCases[] = {
      {"gpus: [\n", "t.yaml:2: end of sequence flow not found"},
      {"", "t.yaml: a GPU peak table is a YAML map with 'gpus', a list of GPUs"},
      {"- gpus\n", "t.yaml: a GPU peak table is a YAML map with 'gpus', a list of GPUs"},
      {"gpus: []\nrules: []\n", "t.yaml: unknown key 'rules' (gpus)"},
      {"gpu: []\n", "t.yaml: unknown key 'gpu' (gpus)"},
      {"{}\n", "t.yaml: 'gpus' is a list of GPUs"},
      {"gpus: {name: G}\n", "t.yaml: 'gpus' is a list of GPUs"},
      {"gpus:\n  - G\n",
       "t.yaml: gpus[0]: a GPU is a map with 'name', 'match', 'source', 'tflops' and "
       "'hbm_tb_per_s'"},
      {std::string("gpus:\n") + kRow + "  - {match: [h], source: s}\n",
       "t.yaml: gpus[1]: 'name' is a non-empty string"},
      {"gpus:\n  - {name: \"\", match: [h], source: s}\n",
       "t.yaml: gpus[0]: 'name' is a non-empty string"},
      {"gpus:\n  - {name: [G], match: [h], source: s}\n",
       "t.yaml: gpus[0]: 'name' is a non-empty string"},
      {"gpus:\n  - {name: G, match: [g], source: s, peak: 1}\n",
       "t.yaml: gpus[0] (G): unknown key 'peak' (name, match, source, tflops, hbm_tb_per_s)"},
      {"gpus:\n  - {name: G, match: [g], source: s, source: t}\n",
       "t.yaml: gpus[0] (G): 'source' given twice"},
      {"gpus:\n  - {name: G, source: s}\n",
       "t.yaml: gpus[0] (G): 'match' is a non-empty list of non-empty strings"},
      {"gpus:\n  - {name: G, match: g, source: s}\n",
       "t.yaml: gpus[0] (G): 'match' is a non-empty list of non-empty strings"},
      {"gpus:\n  - {name: G, match: [], source: s}\n",
       "t.yaml: gpus[0] (G): 'match' is a non-empty list of non-empty strings"},
      {"gpus:\n  - {name: G, match: [g, \"\"], source: s}\n",
       "t.yaml: gpus[0] (G): 'match' is a non-empty list of non-empty strings"},
      {"gpus:\n  - {name: G, match: [NVIDIA G], source: s}\n",
       "t.yaml: gpus[0] (G): match 'NVIDIA G' has upper-case letters (device names are matched "
       "lower-cased)"},
      {std::string("gpus:\n") + kRow + "  - {name: H, match: [h]}\n",
       "t.yaml: gpus[1] (H): 'source' is a non-empty string (the datasheet the figures come "
       "from)"},
      {"gpus:\n  - {name: G, match: [g], source: s, tflops: [1]}\n",
       "t.yaml: gpus[0] (G): 'tflops' is a map from element type to TFLOP/s"},
      {"gpus:\n  - {name: G, match: [g], source: s, tflops: {fp4: 1}}\n",
       "t.yaml: gpus[0] (G): unknown key 'fp4' in 'tflops' (fp64, fp32, tf32, bf16, fp16, fp8, "
       "int8)"},
      {"gpus:\n  - {name: G, match: [g], source: s, tflops: {bf16: 1, bf16: 2}}\n",
       "t.yaml: gpus[0] (G): 'bf16' given twice in 'tflops'"},
      {"gpus:\n  - {name: G, match: [g], source: s, tflops: {bf16: -1}}\n",
       "t.yaml: gpus[0] (G): tflops.bf16 is '-1', not a positive number (or null)"},
      {"gpus:\n  - {name: G, match: [g], source: s, tflops: {fp8: 1.2.3}}\n",
       "t.yaml: gpus[0] (G): tflops.fp8 is '1.2.3', not a positive number (or null)"},
      {"gpus:\n  - {name: G, match: [g], source: s, tflops: {fp32: \"null\"}}\n",
       "t.yaml: gpus[0] (G): tflops.fp32 is 'null', not a positive number (or null)"},
      {"gpus:\n  - {name: G, match: [g], source: s, tflops: {int8: .inf}}\n",
       "t.yaml: gpus[0] (G): tflops.int8 is '.inf', not a positive number (or null)"},
      {"gpus:\n  - {name: G, match: [g], source: s, tflops: {fp64: [1]}}\n",
       "t.yaml: gpus[0] (G): tflops.fp64 is a list, not a positive number (or null)"},
      {"gpus:\n  - {name: G, match: [g], source: s, hbm_tb_per_s: 0}\n",
       "t.yaml: gpus[0] (G): hbm_tb_per_s is '0', not a positive number (or null)"},
      {"gpus:\n  - {name: \"G\\nH\", match: [g], source: s, hbm_tb_per_s: x}\n",
       "t.yaml: gpus[0] (G\\x0aH): hbm_tb_per_s is 'x', not a positive number (or null)"},
      {"gpus:\n"
       "  - {name: H100, match: [h100], source: s}\n"
       "  - {name: H100 NVL, match: [\"h100 nvl\"], source: s}\n",
       "t.yaml: gpus[1] (H100 NVL): match 'h100 nvl' never wins: gpus[0] (H100) comes first and "
       "matches 'h100' (put the more specific row first)"},
      {std::string("gpus:\n") + kRow + "  - {name: G, match: [h], source: s}\n",
       "t.yaml: gpus[1] (G): name also used by gpus[0]"},
  };
  for (const auto& c : kCases) {
    absl::StatusOr<GpuSpecs> specs = Parse(c.yaml);
    ASSERT_FALSE(specs.ok()) << c.yaml;
    EXPECT_EQ(specs.status().code(), absl::StatusCode::kInvalidArgument) << c.yaml;
    EXPECT_EQ(specs.status().message(), c.error) << c.yaml;
  }
}

TEST(LoadGpuSpecs, ReadsAFileAndNamesItInErrors) {
  testing::TempDir dir;
  absl::StatusOr<GpuSpecs> specs =
      LoadGpuSpecs(dir.File("gpus.yaml", "gpus:\n  - {name: G, match: [g], source: s}\n"));
  ASSERT_TRUE(specs.ok()) << specs.status();
  EXPECT_EQ(FindGpu(*specs, "G")->name, "G");

  const std::string bad = dir.File("bad.yaml", "gpus: 1\n");
  EXPECT_EQ(LoadGpuSpecs(bad).status().message(), bad + ": 'gpus' is a list of GPUs");

  const std::string missing = dir.path() + "/missing.yaml";
  absl::Status st = LoadGpuSpecs(missing).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(st.message(), missing + ": cannot open GPU spec file: No such file or directory");
}

// --gpu-spec FILE adds its rows to the built-in table, each replacing the built-in row of its
// name; the GPUs it does not name keep their built-in peaks.
TEST(WithBuiltinGpuSpecs, AddsRowsAndReplacesTheBuiltinRowOfTheirName) {
  absl::StatusOr<GpuSpecs> mine = ParseGpuSpecs(R"(gpus:
  - name: H100 SXM
    match: ["nvidia h100 80gb"]
    source: our measurement
    tflops: {bf16: 700}
    hbm_tb_per_s: 3.0
  - name: Radeon RX 7900 XTX
    match: ["radeon rx 7900 xtx"]
    source: ours too
    tflops: {fp16: 122.8}
)",
                                                "mine.yaml");
  ASSERT_TRUE(mine.ok()) << mine.status();
  const GpuSpecs specs = WithBuiltinGpuSpecs(*mine);
  EXPECT_EQ(specs.gpus.size(), BuiltinGpuSpecs().gpus.size() + 1);
  EXPECT_EQ(std::count_if(specs.gpus.begin(), specs.gpus.end(),
                          [](const GpuPeak& g) { return g.name == "H100 SXM"; }),
            1);
  const GpuPeak* h100 = FindGpu(specs, "NVIDIA H100 80GB HBM3");
  ASSERT_NE(h100, nullptr);
  EXPECT_EQ(h100->source, "our measurement");
  EXPECT_EQ(h100->Tflops(DType::kBf16), 700);
  EXPECT_EQ(h100->Tflops(DType::kFp32), std::nullopt);  // a row replaces a row, figure and all
  const GpuPeak* radeon = FindGpu(specs, "AMD Radeon RX 7900 XTX");
  ASSERT_NE(radeon, nullptr);
  EXPECT_EQ(radeon->name, "Radeon RX 7900 XTX");
  const GpuPeak* mi300 = FindGpu(specs, "AMD Instinct MI300X VF");
  ASSERT_NE(mi300, nullptr);
  EXPECT_EQ(mi300->name, "MI300X");  // not in the file: the built-in row
  EXPECT_EQ(mi300->Tflops(DType::kBf16), 1307.4);
}

TEST(DTypeName, NamesTheTableKeys) {
  const std::vector<std::string> names = {"",     "fp64", "fp32", "tf32",
                                          "bf16", "fp16", "fp8",  "int8"};
  ASSERT_EQ(names.size(), kDTypes);
  for (size_t type = 0; type < kDTypes; ++type)
    EXPECT_EQ(DTypeName(static_cast<DType>(type)), names[type]);
}

}  // namespace
}  // namespace tracefuse
