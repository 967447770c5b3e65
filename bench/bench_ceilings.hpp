// Access-pattern ceilings (bench_ceilings.cu), reported beside the copy ceiling.
#pragma once

#include <cstdint>

namespace baracuda::bench {

// Bytes per second (TB/s) reading `rows` rows of row_bytes (a multiple of 16) at uniformly
// random rows of the V-row table at `table` (16-byte aligned), 8 loads in flight per thread.
double measure_random_row_read_tbps(const void* table, int64_t V, int row_bytes, int64_t rows);

}  // namespace baracuda::bench
