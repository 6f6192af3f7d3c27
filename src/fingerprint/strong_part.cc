#include "fingerprint/strong_part.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>

namespace magneton::fingerprint_internal {
namespace {

AxisMarginal Marginal(const std::vector<double>& core, const std::vector<int64_t>& dims, size_t axis) {
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= dims[d];
  for (size_t d = axis + 1; d < dims.size(); ++d) inner *= dims[d];
  const int64_t n = dims[axis];
  std::vector<double> sums(static_cast<size_t>(n), 0.0);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < n; ++i) {
      const double* p = core.data() + (o * n + i) * inner;
      double s = 0;
      for (int64_t r = 0; r < inner; ++r) s += p[r];
      sums[i] += s;
    }
  }
  // Fold into contiguous chunks: keeps the fingerprint small while staying
  // sensitive to where along the axis the mass sits.
  AxisMarginal m;
  m.axis_size = n;
  const int64_t chunks = std::min<int64_t>(n, kMaxMarginalValues);
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t lo = c * n / chunks, hi = (c + 1) * n / chunks;
    double s = 0;
    for (int64_t i = lo; i < hi; ++i) s += sums[i];
    m.chunk_sums.push_back(s);
    m.chunk_elements.push_back((hi - lo) * outer * inner);
  }
  return m;
}

// Singular values of the unfolding with the axes in `mask` as rows, via the
// eigenvalues of the smaller Gram matrix (rows^2 * cols work, no full SVD).
UnfoldingSpectrum Spectrum(const std::vector<double>& core, const std::vector<int64_t>& dims, unsigned mask) {
  const size_t rank = dims.size();
  int64_t rows = 1, cols = 1;
  for (size_t d = 0; d < rank; ++d) (mask >> d & 1u ? rows : cols) *= dims[d];
  Eigen::MatrixXd m(rows, cols);
  // Walk elements in row-major order, tracking the row/column index.
  std::vector<int64_t> index(rank, 0);
  for (size_t e = 0; e < core.size(); ++e) {
    int64_t r = 0, c = 0;
    for (size_t d = 0; d < rank; ++d) {
      if (mask >> d & 1u) {
        r = r * dims[d] + index[d];
      } else {
        c = c * dims[d] + index[d];
      }
    }
    m(r, c) = core[e];
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < dims[d]) break;
      index[d] = 0;
    }
  }
  Eigen::MatrixXd gram = rows <= cols ? Eigen::MatrixXd(m * m.transpose()) : Eigen::MatrixXd(m.transpose() * m);
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(gram, Eigen::EigenvaluesOnly);
  UnfoldingSpectrum s;
  s.rows = std::min(rows, cols);
  s.cols = std::max(rows, cols);
  const auto& ev = solver.eigenvalues();  // ascending
  for (int64_t i = ev.size() - 1; i >= 0 && static_cast<int>(s.singular_values.size()) < kMaxSingularValues; --i) {
    s.singular_values.push_back(std::sqrt(std::max(ev[i], 0.0)));
  }
  return s;
}

}  // namespace

StrongPart ComputeStrongPart(const std::vector<double>& core, const std::vector<int64_t>& full_dims,
                             const std::vector<int64_t>& core_dims, const FingerprintOptions& options) {
  StrongPart part;
  const size_t rank = core_dims.size();
  if (rank == 0 || static_cast<int>(rank) > options.strong_max_rank) return part;
  part.present = true;
  part.dims = full_dims;
  part.core_dims = core_dims;
  for (size_t k = 0; k < rank; ++k) part.marginals.push_back(Marginal(core, core_dims, k));
  if (rank >= 2 && static_cast<int64_t>(core.size()) <= options.spectrum_max_elements) {
    // Each bipartition once: the side holding axis 0 is the row set.
    for (unsigned mask = 1; mask < (1u << rank) - 1; mask += 2) {
      int64_t rows = 1;
      for (size_t d = 0; d < rank; ++d) {
        if (mask >> d & 1u) rows *= core_dims[d];
      }
      const int64_t small = std::min<int64_t>(rows, static_cast<int64_t>(core.size()) / rows);
      if (small > options.spectrum_max_rows) continue;
      part.spectra.push_back(Spectrum(core, core_dims, mask));
    }
  }
  return part;
}

}  // namespace magneton::fingerprint_internal
