// Machine ceilings, measured: the copy bandwidth of large arrays with every OpenMP thread, and
// the GFLOP/s of a large f32 matmul through oneDNN with the weights packed as fusor's kernels
// pack them. Measurements are cached in ceilings.json, keyed by CPU model and thread count.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "fusor/profile.h"

namespace fusor {

// The directory ceilings.json lives in (see CeilingOptions::cache_dir); empty when none found.
std::string ceilings_cache_dir(const std::string& override_dir);
// The cache key of one entry: "<cpu>|threads=<n>|full" (or "|quick").
std::string ceilings_cache_key(const std::string& cpu, int threads, bool quick);

// Best of `reps` parallel copies of `bytes` bytes; counts read + written bytes.
double measure_copy_gbps(size_t bytes, int reps);
// Best of `reps` n x n x n f32 matmuls after one warm-up; 2*n^3 FLOPs each.
double measure_sgemm_gflops(int64_t n, int reps);

}  // namespace fusor
