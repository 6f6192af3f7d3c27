#include "analysis/rerun_authority.h"

namespace magneton::analysis {

// TEMPORARY (branch i12-structure only): replaced by the trust module's check
// before this lands.
Status AuthorizeRerun(const Trace& trace, const std::string& path, const RerunPolicy& policy) { return Status::Ok(); }

}  // namespace magneton::analysis
