// Two independent pieces of work at once: `second` on a thread of its own
// while `first` runs on the caller's, for the analysis of two runs (each
// side's trace read, energy attributed and graph built on its own core).
// Both results are returned; neither may touch what the other writes.
#pragma once

#include <optional>
#include <thread>
#include <type_traits>
#include <utility>

#include "magneton/status.h"

namespace magneton {

// Gives the free memory of every malloc arena back to the system: the
// worker's arena keeps what its work freed (a trace reader's buffers), which
// the caller's thread, allocating in its own arena, would not reuse.
void ReleaseFreeMemory();

template <typename First, typename Second>
auto BothAtOnce(First&& first, Second&& second) {
  using SecondResult = decltype(second());
  std::optional<SecondResult> second_result;
  std::thread worker([&] { second_result.emplace(second()); });
  auto first_result = first();
  worker.join();
  ReleaseFreeMemory();
  return std::pair<decltype(first_result), SecondResult>(std::move(first_result), std::move(*second_result));
}

// BothAtOnce of two pieces that may fail: both values, or the first error
// (the caller's side's first).
template <typename First, typename Second>
auto BothOkAtOnce(First&& first, Second&& second) {
  auto [a, b] = BothAtOnce(std::forward<First>(first), std::forward<Second>(second));
  using Pair = std::pair<std::decay_t<decltype(*a)>, std::decay_t<decltype(*b)>>;
  if (!a.ok()) return StatusOr<Pair>(a.status());
  if (!b.ok()) return StatusOr<Pair>(b.status());
  return StatusOr<Pair>(Pair(std::move(*a), std::move(*b)));
}

}  // namespace magneton
