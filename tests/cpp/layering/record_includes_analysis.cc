// Compiled as if it were a file of the record stage: the public header of a
// later stage (analysis) must not be visible either.
#include "magneton/analysis.h"

int RecordSeesAnalysis() { return sizeof(magneton::AnalysisOptions) > 0; }
