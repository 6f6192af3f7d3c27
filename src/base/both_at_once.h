// Two independent pieces of work at once: `second` on a thread of its own
// while `first` runs on the caller's, for the analysis of two runs (each
// side's trace read, energy attributed and graph built on its own core).
// Both results are returned; neither may touch what the other writes.
#pragma once

#include <optional>
#include <thread>
#include <utility>

namespace magneton {

template <typename First, typename Second>
auto BothAtOnce(First&& first, Second&& second) {
  using SecondResult = decltype(second());
  std::optional<SecondResult> second_result;
  std::thread worker([&] { second_result.emplace(second()); });
  auto first_result = first();
  worker.join();
  return std::pair<decltype(first_result), SecondResult>(std::move(first_result), std::move(*second_result));
}

}  // namespace magneton
