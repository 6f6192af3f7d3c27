// Compiled as if it were a file of the detect stage: including the stage
// above it must not compile (the back-include the layering forbids).
#include "diagnose/diagnose.h"

int DetectSeesDiagnose() { return sizeof(magneton::diagnose::Diagnosis) > 0; }
