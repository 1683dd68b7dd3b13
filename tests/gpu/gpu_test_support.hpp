// What the GPU suites share: the process's Vulkan contexts, the tolerances they hold the GPU to
// the config of the cache-path tests, random inputs and the error measure the sessions use.
//
// Without a usable Vulkan device every test fails, unless HEADWAY_GPU_TESTS_OPTIONAL=1 (then
// they pass with a message): CI has lavapipe, so a missing device there is a fault.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "headway/backend.hpp"
#include "headway/config.hpp"
#include "tests/support/test_rng.hpp"

namespace headway {
namespace test {

// The README's tolerances: max |gpu − reference| for f32, f16 and bf16 K/V; q8_0 and q4_0 K/V
// against the reference fed their dequantized values (the shader widens them exactly, as f32), or
// against the CPU backend, which reads the same bytes: f32's.
inline double gpu_tolerance(DType t) { return t == DType::kF16 ? 2e-3 : t == DType::kBF16 ? 3e-2 : 1e-4; }

inline bool optional_gpu() {
  const char* e = std::getenv("HEADWAY_GPU_TESTS_OPTIONAL");
  return e != nullptr && std::strcmp(e, "1") == 0;
}

// The process's contexts: the device as it is, and the same device without 16-bit storage and
// without host-mapped memory (the f32 fallback and the staging path of discrete GPUs). Both split
// K/V from 32 keys on (GpuOptions::split_kv_min_keys, default 256), so decode over a few dozen
// keys takes the split-KV path and its merge. Null (with a message) where there is no device and
// HEADWAY_GPU_TESTS_OPTIONAL=1.
inline GpuContext* gpu_context(bool fallback = false) {
  static std::unique_ptr<GpuContext> ctx[2];
  static Status status[2];
  static bool tried[2] = {false, false};
  const int i = fallback ? 1 : 0;
  if (!tried[i]) {
    tried[i] = true;
    ctx[i] = std::make_unique<GpuContext>();
    GpuOptions o;
    o.allow_16bit_storage = !fallback;
    o.allow_host_mapped = !fallback;
    o.split_kv_min_keys = 32;
    if (const char* d = std::getenv("HEADWAY_GPU_DEVICE")) o.device_index = std::atoi(d);  // gpu_check.sh
    status[i] = ctx[i]->create(o);
    if (status[i].ok()) {
      const GpuDeviceInfo& d = ctx[i]->info();
      MESSAGE("device: " << d.name << " (" << std::string(d.type) << "), subgroup " << d.subgroup_size << ", shared "
                         << d.max_shared_bytes << " B, 16-bit storage " << d.storage_16bit << ", host-mapped "
                         << d.host_mapped);
    }
  }
  if (!status[i].ok()) {
    if (optional_gpu()) {
      MESSAGE("skipped (HEADWAY_GPU_TESTS_OPTIONAL=1): " << status[i].message());
      return nullptr;
    }
    FAIL("no Vulkan device for the GPU tests (set HEADWAY_GPU_TESTS_OPTIONAL=1 to skip): " << status[i].message());
  }
  return ctx[i].get();
}

// A cache config: 8 heads over 2 kv heads of 64, NeoX RoPE, causal; a window brings softcap 30.
inline Config cache_config(DType dt, uint32_t window, uint32_t max_seq) {
  Config c;
  c.set_name("gpu-test");
  c.n_heads = 8;
  c.n_kv_heads = 2;
  c.head_dim = 64;
  c.d_model = 512;
  c.max_seq = max_seq;
  c.rope.style = RopeStyle::kNeox;
  c.rope.theta = 10000.0f;
  c.window = window;
  c.softcap = window ? 30.0f : 0.0f;
  c.causal = true;
  c.kv_dtype = dt;
  return c;
}

// t rows of d unit-normal values.
inline std::vector<float> random_x(uint32_t t, uint32_t d, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> x(size_t{t} * d);
  for (float& v : x) v = rng.normal();
  return x;
}

// max |got − want| over the larger of 1 and max |want|; a NaN counts as 1e30.
inline double relative_error(const std::vector<float>& got, const std::vector<float>& want) {
  double scale = 1.0, err = 0.0;
  for (float w : want) scale = std::max(scale, double{std::fabs(w)});
  for (size_t i = 0; i < want.size(); ++i) {
    const double e = std::fabs(double{got[i]} - double{want[i]});
    err = std::isnan(e) ? 1e30 : std::max(err, e);
  }
  return err / scale;
}

}  // namespace test
}  // namespace headway
