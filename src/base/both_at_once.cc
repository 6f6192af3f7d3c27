#include "base/both_at_once.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace magneton {

void ReleaseFreeMemory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

}  // namespace magneton
